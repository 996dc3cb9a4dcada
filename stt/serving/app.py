"""The speech-to-text container's ASGI app: `GET /ping`, `POST /invocations` (a whole clip -> JSON
transcript), `WS /invocations-bidirectional-stream` (PCM frames in, partials and finals out).

`POST /invocations` answers every bad request with typed JSON: 415 for a media type other than WAV or
PCM, 413 for a body over the clip limit (read as a stream, refused as soon as it is over), 400 for audio
it cannot read (wrong rate, channels, sample format, odd or empty PCM), 503 while the models load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.serving.model_host import ModelHost
from stt.serving.session import Session
from stt.wire import protocol
from stt.wire.protocol import ProtocolError, parse_clip

log = logging.getLogger("stt.serving.app")

HTTP_STATUS = {
    "body_too_large": 413,
    "audio_too_long": 413,
    "unsupported_media_type": 415,
    "transcription_failed": 500,
    "not_ready": 503,
}


def _error(error: ProtocolError) -> Response:
    return Response(
        json.dumps(error.to_json()),
        status_code=HTTP_STATUS.get(error.code, 400),
        media_type="application/json",
    )


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise ProtocolError("body_too_large", f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ProtocolError("body_too_large", f"the body is over the limit of {limit} bytes")
    return bytes(body)


def create_app(config: STTConfig) -> Starlette:
    host = ModelHost(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loading = asyncio.create_task(host.load())
        yield
        loading.cancel()

    def not_ready() -> Response:
        return _error(ProtocolError("not_ready", host.load_error or "models are loading"))

    async def ping(request: Request) -> Response:
        if not host.ready.is_set() or host.transcriber is None:
            return not_ready()
        return JSONResponse(
            {"status": "ok", "model": host.transcriber.model_dir.name, "device": host.transcriber.device}
        )

    async def invocations(request: Request) -> Response:
        if not host.ready.is_set():
            return not_ready()
        try:
            body = await _read_body(request, config.max_body_bytes)
            samples = parse_clip(body, request.headers.get("content-type"), config.max_clip_s)
        except ProtocolError as error:
            return _error(error)
        try:
            transcript = await host.transcribe_clip(samples)
        except Exception as exc:
            log.exception("transcription failed")
            return _error(
                ProtocolError("transcription_failed", f"transcription failed: {type(exc).__name__}")
            )
        duration_ms = round(len(samples) * 1000 / STT_SAMPLE_RATE)
        return JSONResponse(protocol.transcript(transcript.text, transcript.words, duration_ms))

    async def bidirectional(websocket: WebSocket) -> None:
        if not host.ready.is_set():
            await websocket.close(code=1013, reason="models are loading")
            return
        await websocket.accept()
        await Session(websocket, host, config).run()

    app = Starlette(
        routes=[
            Route("/ping", ping, methods=["GET", "POST"]),
            Route("/invocations", invocations, methods=["POST"]),
            WebSocketRoute("/invocations-bidirectional-stream", bidirectional),
        ],
        lifespan=lifespan,
    )
    app.state.model_host = host
    return app
