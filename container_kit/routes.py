"""The SageMaker container routes: each answers for a container that is not ready, and hands a ready
one's request to the container (`Container`, the app's `state.container`).

- `GET /ping` (and POST, which some health checkers send): 503 with the typed `not_ready` error (the
  load error, or "loading") until the model is ready, then the container's JSON.
- `POST /invocations`: 503 `not_ready` until ready, then the container's answer.
- `WS /invocations-bidirectional-stream`: closed with 1013 (try again later) while loading, then accepted
  and handed to the container's session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from container_kit.container import Container
from container_kit.errors import RequestError

# The close code of a WebSocket refused for now: "try again later" (RFC 6455 registry).
TRY_AGAIN_LATER = 1013


def error_response(error: RequestError, statuses: Mapping[str, int]) -> Response:
    """Typed JSON, non-ASCII escaped so that no client value can make the reply unencodable."""
    return Response(
        json.dumps(error.to_json()), status_code=statuses.get(error.code, 400), media_type="application/json"
    )


def _container(connection: HTTPConnection) -> Container:
    return connection.app.state.container


def _not_ready(container: Container) -> Response:
    message = container.host.load_error or container.host.loading
    return error_response(RequestError("not_ready", message), container.statuses)


async def ping(request: Request) -> Response:
    container = _container(request)
    if not container.host.ready.is_set():
        return _not_ready(container)
    return JSONResponse(container.health())


async def invocations(request: Request) -> Response:
    container = _container(request)
    if not container.host.ready.is_set():
        return _not_ready(container)
    return await container.invoke(request)


async def bidirectional(websocket: WebSocket) -> None:
    container = _container(websocket)
    if not container.host.ready.is_set():
        await websocket.close(code=TRY_AGAIN_LATER, reason=container.host.loading)
        return
    await websocket.accept()
    await container.converse(websocket)


ROUTES: list[BaseRoute] = [
    Route("/ping", ping, methods=["GET", "POST"]),
    Route("/invocations", invocations, methods=["POST"]),
    WebSocketRoute("/invocations-bidirectional-stream", bidirectional),
]
