"""The kit's app around a container of the test's own (a real Starlette app, served in-process): what each
route answers before the model is ready (503 `not_ready` with the load error or "loading", a WebSocket
refused with 1013), the container's own answers once it is, the lifespan that loads and closes the host,
the body bounded as a stream, and typed errors by the container's status table."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from container_kit.app import container_app
from container_kit.body import read_body
from container_kit.container import ModelHost
from container_kit.errors import KIT_STATUSES, RequestError, error_statuses
from container_kit.routes import error_response

LIMIT = 16


@dataclass(kw_only=True)
class Host(ModelHost):
    """Loads at once, fails with `fail`, or (`hold`) never finishes loading."""

    fail: str | None = None
    hold: bool = False
    closed: bool = False

    async def load(self) -> None:
        if self.hold:
            await asyncio.Event().wait()
        if self.fail:
            self.load_error = self.fail
            return
        self.ready.set()

    async def close(self) -> None:
        self.closed = True


class Echo:
    """A container that answers with what it is sent: bodies up to LIMIT bytes, one WebSocket message."""

    statuses = error_statuses({"too_loud": 422})

    def __init__(self, host: Host) -> None:
        self.host = host

    def health(self) -> dict[str, object]:
        return {"status": "ok", "model": "echo"}

    async def invoke(self, request: Request) -> Response:
        try:
            body = await read_body(request, LIMIT)
            if body == b"LOUD":
                raise RequestError("too_loud", "say it \u00e9 quieter")
        except RequestError as error:
            return error_response(error, self.statuses)
        return Response(body)

    async def converse(self, websocket: WebSocket) -> None:
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()


@pytest.fixture
def host() -> Host:
    return Host()


@pytest.fixture
def client(host: Host) -> Iterator[TestClient]:
    with TestClient(container_app(Echo(host))) as running:
        running.portal.call(asyncio.sleep, 0.05)  # the lifespan's load task runs
        yield running


def not_ready(message: str) -> dict[str, object]:
    return {"type": "error", "code": "not_ready", "message": message}


@pytest.mark.parametrize("host", [Host(hold=True)], ids=["loading"])
def test_while_the_model_loads_every_route_says_so(client: TestClient, host: Host):
    for response in (client.get("/ping"), client.post("/ping"), client.post("/invocations", content=b"x")):
        assert (response.status_code, response.json()) == (503, not_ready("model is loading"))
    with (
        pytest.raises(WebSocketDisconnect) as refused,
        client.websocket_connect("/invocations-bidirectional-stream"),
    ):
        pass
    assert (refused.value.code, refused.value.reason) == (1013, "model is loading")


@pytest.mark.parametrize("host", [Host(fail="OSError: no weights")], ids=["failed"])
def test_a_model_that_did_not_load_says_why(client: TestClient, host: Host):
    response = client.get("/ping")
    assert (response.status_code, response.json()) == (503, not_ready("OSError: no weights"))
    assert client.post("/invocations", content=b"x").json() == not_ready("OSError: no weights")


def test_once_ready_the_container_answers(client: TestClient, host: Host):
    assert client.app.state.model_host is host
    ping = client.get("/ping")
    assert (ping.status_code, ping.json()) == (200, {"status": "ok", "model": "echo"})
    assert client.post("/invocations", content=b"hello").content == b"hello"
    with client.websocket_connect("/invocations-bidirectional-stream") as ws:
        ws.send_text("hi")
        assert ws.receive_text() == "hi"


def test_the_lifespan_closes_the_host_and_stops_a_load_in_progress():
    host = Host(hold=True)
    with TestClient(container_app(Echo(host))) as client:
        assert client.get("/ping").status_code == 503
    assert host.closed and not host.ready.is_set()


def test_a_body_over_the_limit_is_refused_by_its_length_or_as_soon_as_it_is_over(client: TestClient):
    assert client.post("/invocations", content=b"x" * LIMIT).status_code == 200
    declared = client.post("/invocations", content=b"x" * (LIMIT + 1))
    assert (declared.status_code, declared.json()["code"]) == (413, "body_too_large")
    assert declared.json()["message"] == f"the body has {LIMIT + 1} bytes; the limit is {LIMIT}"
    huge = client.post("/invocations", content=b"x", headers={"content-length": "9" * 19})
    assert (huge.status_code, huge.json()["code"]) == (413, "body_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked
        yield from [b"x" * 10] * 100

    streamed = client.post("/invocations", content=chunks())
    assert (streamed.status_code, streamed.json()["message"]) == (
        413,
        f"the body is over the limit of {LIMIT} bytes",
    )


def test_errors_are_typed_by_the_containers_table_and_escaped(client: TestClient):
    response = client.post("/invocations", content=b"LOUD")
    assert response.status_code == 422
    assert "\\u00e9" in response.text and json.loads(response.text)["message"] == "say it \u00e9 quieter"
    assert error_response(RequestError("no_such_code", "?"), Echo.statuses).status_code == 400


def test_a_container_cannot_give_a_kit_code_another_status():
    assert error_statuses({"busy": 503}) == {**KIT_STATUSES, "busy": 503}
    with pytest.raises(ValueError, match="not_ready"):
        error_statuses({"not_ready": 500})
