"""The container's ASGI app: `GET /ping`, `POST /invocations`, `WS /invocations-bidirectional-stream`.

The routes only glue the parts together: the protocol parses, the scheduler computes, the streaming
module frames and encodes, the session runs a WebSocket conversation.

`POST /invocations` answers every bad request with typed JSON before any audio: 415 for a media type
other than JSON, 413 for a body over `TTS_MAX_BODY_BYTES` (read as a stream, refused as soon as it is
over), 400 for a bad message, including a text that turns out to have nothing to speak (the response
starts only once the first audio frame exists).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from facts import MEDIA_TYPES
from tts.config import TTSConfig
from tts.scheduling.scheduler import Job
from tts.serving.model_host import ModelHost
from tts.serving.session import Session
from tts.serving.streaming import AudioStats, SynthesisFailed, audio_frames
from tts.text.timings import TimedWords
from tts.wire import protocol
from tts.wire.audio import frame_bytes
from tts.wire.protocol import ProtocolError, check_media_type, parse_invocation
from tts.wire.sse import encode_event

log = logging.getLogger("tts.serving.app")

# HTTP status of each error code on `POST /invocations`; every other code is a 400.
HTTP_STATUS = {
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "synthesis_failed": 500,
    "not_ready": 503,
    "busy": 503,
}


def _error(error: ProtocolError) -> Response:
    """Typed JSON, non-ASCII escaped so that no client value can make the reply unencodable."""
    return Response(
        json.dumps(error.to_json()),
        status_code=HTTP_STATUS.get(error.code, 400),
        media_type="application/json",
    )


def _not_ready(host: ModelHost) -> Response:
    return _error(ProtocolError("not_ready", host.load_error or "model is loading"))


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk and refused as soon as it is over `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise ProtocolError("body_too_large", f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ProtocolError("body_too_large", f"the body is over the limit of {limit} bytes")
    return bytes(body)


def create_app(config: TTSConfig) -> Starlette:
    host = ModelHost(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loading = asyncio.create_task(host.load())
        yield
        loading.cancel()
        await host.close()

    async def ping(request: Request) -> Response:
        if not host.ready.is_set():
            return _not_ready(host)
        engine, load = host.engine, host.scheduler.load if host.scheduler else None
        return JSONResponse({"status": "ok", "engine": engine.name, "device": engine.device, "load": load})

    async def invocations(request: Request) -> Response:
        if not host.ready.is_set() or host.scheduler is None or host.catalog is None:
            return _not_ready(host)
        try:
            check_media_type(request.headers.get("content-type"))
            body = await _read_body(request, config.max_body_bytes)
            synth, transport = parse_invocation(body, host.catalog)
        except ProtocolError as error:
            return _error(error)
        job = host.scheduler.submit(object(), synth)
        stats = AudioStats()
        frames = audio_frames(job, frame_bytes(config.frame_ms), stats)
        try:
            first = await anext(frames, None)
        except SynthesisFailed as exc:
            return _error(ProtocolError(exc.code, str(exc), synth.request_id))
        except BaseException:
            _release(host, job)
            raise
        if transport == "sse":
            return StreamingResponse(
                _sse_events(host, job, first, frames, stats), media_type="text/event-stream"
            )
        return StreamingResponse(_binary_body(host, job, first, frames), media_type=MEDIA_TYPES[synth.format])

    async def bidirectional(websocket: WebSocket) -> None:
        if not host.ready.is_set() or host.scheduler is None or host.catalog is None:
            await websocket.close(code=1013, reason="model is loading")
            return
        await websocket.accept()
        await Session(
            websocket,
            host.scheduler,
            host.catalog,
            frame_bytes(config.frame_ms),
            config.send_ahead_ms / 1000,
        ).run()

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


async def _binary_body(
    host: ModelHost, job: Job, first: bytes | TimedWords | None, frames: AsyncIterator[bytes | TimedWords]
) -> AsyncIterator[bytes]:
    """Audio only: a request with timestamps is refused on this transport (`parse_invocation`)."""
    try:
        if isinstance(first, bytes):
            yield first
        async for frame in frames:
            if isinstance(frame, bytes):
                yield frame
    finally:
        _release(host, job)


async def _sse_events(
    host: ModelHost,
    job: Job,
    first: bytes | TimedWords | None,
    frames: AsyncIterator[bytes | TimedWords],
    stats: AudioStats,
) -> AsyncIterator[bytes]:
    request = job.request
    try:
        yield encode_event(protocol.audio_stream_start(request))
        seq = 0
        try:
            async for frame in _prepend(first, frames):
                if isinstance(frame, TimedWords):
                    yield encode_event(protocol.words(request, frame))
                    continue
                yield _audio_chunk(seq, frame)
                seq += 1
        except SynthesisFailed as exc:
            yield encode_event(ProtocolError(exc.code, str(exc), request.request_id).to_json())
            return
        yield encode_event(protocol.audio_stream_end(request, stats.frames, stats.duration_s))
    finally:
        _release(host, job)


async def _prepend[Item](first: Item | None, rest: AsyncIterator[Item]) -> AsyncIterator[Item]:
    if first is not None:
        yield first
    async for item in rest:
        yield item


def _audio_chunk(seq: int, frame: bytes) -> bytes:
    return encode_event(protocol.audio_chunk(seq, base64.b64encode(frame).decode()))


def _release(host: ModelHost, job: Job) -> None:
    """If the client went away mid-stream, free the engine for everyone else (no-op once finished)."""
    if host.scheduler is not None:
        host.scheduler.cancel(job)
