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

from tts.config import SAMPLE_RATE, TTSConfig
from tts.encoders import CONTENT_TYPES
from tts.protocol import ProtocolError, check_media_type, parse_invocation
from tts.runtime import Runtime
from tts.scheduler import Job
from tts.session import Session
from tts.sse import encode_event
from tts.streaming import AudioStats, SynthesisFailed, audio_frames

log = logging.getLogger("tts.server")

# HTTP status of each error code on `POST /invocations`; every other code is a 400.
HTTP_STATUS = {
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "synthesis_failed": 500,
    "not_ready": 503,
}


def _error(error: ProtocolError) -> Response:
    """Typed JSON, non-ASCII escaped so that no client value can make the reply unencodable."""
    return Response(
        json.dumps(error.to_json()),
        status_code=HTTP_STATUS.get(error.code, 400),
        media_type="application/json",
    )


def _not_ready(runtime: Runtime) -> Response:
    return _error(ProtocolError("not_ready", runtime.load_error or "model is loading"))


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
    runtime = Runtime(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loading = asyncio.create_task(runtime.load())
        yield
        loading.cancel()
        await runtime.close()

    async def ping(request: Request) -> Response:
        if not runtime.ready.is_set():
            return _not_ready(runtime)
        engine = runtime.engine
        return JSONResponse({"status": "ok", "engine": engine.name, "device": engine.device})

    async def invocations(request: Request) -> Response:
        if not runtime.ready.is_set() or runtime.scheduler is None or runtime.catalog is None:
            return _not_ready(runtime)
        try:
            check_media_type(request.headers.get("content-type"))
            body = await _read_body(request, config.max_body_bytes)
            synth, transport = parse_invocation(body, runtime.catalog)
        except ProtocolError as error:
            return _error(error)
        job = runtime.scheduler.submit(object(), synth)
        stats = AudioStats()
        frames = audio_frames(job, config.frame_bytes, stats)
        try:
            first = await anext(frames, None)
        except SynthesisFailed as exc:
            return _error(ProtocolError(exc.code, str(exc), synth.request_id))
        except BaseException:
            _release(runtime, job)
            raise
        if transport == "sse":
            return StreamingResponse(
                _sse_events(runtime, job, first, frames, stats), media_type="text/event-stream"
            )
        return StreamingResponse(
            _binary_body(runtime, job, first, frames), media_type=CONTENT_TYPES[synth.format]
        )

    async def bidirectional(websocket: WebSocket) -> None:
        if not runtime.ready.is_set() or runtime.scheduler is None or runtime.catalog is None:
            await websocket.close(code=1013, reason="model is loading")
            return
        await websocket.accept()
        await Session(
            websocket, runtime.scheduler, runtime.catalog, config.frame_bytes, config.send_ahead_ms / 1000
        ).run()

    app = Starlette(
        routes=[
            Route("/ping", ping, methods=["GET", "POST"]),
            Route("/invocations", invocations, methods=["POST"]),
            WebSocketRoute("/invocations-bidirectional-stream", bidirectional),
        ],
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    return app


async def _binary_body(
    runtime: Runtime, job: Job, first: bytes | None, frames: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    try:
        if first is not None:
            yield first
        async for frame in frames:
            yield frame
    finally:
        _release(runtime, job)


async def _sse_events(
    runtime: Runtime, job: Job, first: bytes | None, frames: AsyncIterator[bytes], stats: AudioStats
) -> AsyncIterator[bytes]:
    request = job.request
    try:
        yield encode_event(
            {
                "type": "audio_stream_start",
                "request_id": request.request_id,
                "format": request.format,
                "voice": request.voice,
                "sample_rate": SAMPLE_RATE,
                "channels": 1,
            }
        )
        seq = 0
        try:
            if first is not None:
                yield _audio_chunk(seq, first)
                seq += 1
            async for frame in frames:
                yield _audio_chunk(seq, frame)
                seq += 1
        except SynthesisFailed as exc:
            yield encode_event(ProtocolError(exc.code, str(exc), request.request_id).to_json())
            return
        yield encode_event(
            {
                "type": "audio_stream_end",
                "request_id": request.request_id,
                "total_chunks": stats.frames,
                "duration_s": stats.duration_s,
            }
        )
    finally:
        _release(runtime, job)


def _audio_chunk(seq: int, frame: bytes) -> bytes:
    return encode_event({"type": "audio_chunk", "seq": seq, "data": base64.b64encode(frame).decode()})


def _release(runtime: Runtime, job: Job) -> None:
    """If the client went away mid-stream, free the engine for everyone else (no-op once finished)."""
    if runtime.scheduler is not None:
        runtime.scheduler.cancel(job)
