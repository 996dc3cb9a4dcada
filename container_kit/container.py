"""What a model container hands the kit: its model host (what loads the model, and whether it is ready)
and its own answers on the three routes, once the model is ready (`routes.py` answers before that)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket


@dataclass(kw_only=True)
class ModelHost:
    """What holds a container's model, which its subclass loads (`load`). It loads after the server
    listens, because SageMaker expects the container to accept connections within 250 ms and reads
    `/ping` 200 as "ready"; until then the routes answer 503 (and the WebSocket 1013)."""

    loading: ClassVar[str] = "model is loading"
    """What `/ping` and `/invocations` say while the model loads, and the WebSocket's 1013 reason."""
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the model is loaded and warm."""
    load_error: str | None = None
    """Why the model did not load: what `/ping`'s 503 says instead of `loading`."""

    async def load(self) -> None:
        """Load the model without blocking the event loop (its work in threads), then set `ready`; a
        failure is kept in `load_error`, not raised."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release what `load` started (the server is shutting down): nothing, unless a host says."""


class Container(Protocol):
    host: ModelHost
    statuses: Mapping[str, int]
    """Error code -> HTTP status (`errors.error_statuses`)."""

    def health(self) -> dict[str, object]:
        """`GET /ping`'s JSON once ready."""
        ...

    async def invoke(self, request: Request) -> Response:
        """`POST /invocations` once ready (`body.read_body` reads the body within the container's limit)."""
        ...

    async def converse(self, websocket: WebSocket) -> None:
        """One accepted `/invocations-bidirectional-stream` session, to its end."""
        ...
