"""The container's ASGI app: `GET /ping`, `POST /invocations`, `WS /invocations-bidirectional-stream`.

The routes only glue the parts together: the protocol parses, the scheduler computes, the streaming
module frames and encodes, the session runs a WebSocket conversation.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from tts.config import SAMPLE_RATE, TTSConfig
from tts.encoders import CONTENT_TYPES
from tts.protocol import ProtocolError, parse_invocation
from tts.runtime import Runtime
from tts.scheduler import Job
from tts.session import Session
from tts.sse import encode_event
from tts.streaming import AudioStats, SynthesisFailed, audio_frames

log = logging.getLogger("tts.server")


def _not_ready(runtime: Runtime) -> JSONResponse:
    reason = runtime.load_error or "model is loading"
    return JSONResponse({"type": "error", "code": "not_ready", "message": reason}, status_code=503)


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
            synth, transport = parse_invocation(await request.body(), runtime.catalog)
        except ProtocolError as error:
            return JSONResponse(error.to_json(), status_code=400)
        job = runtime.scheduler.submit(object(), synth)
        if transport == "sse":
            return StreamingResponse(_sse_events(runtime, job), media_type="text/event-stream")
        return StreamingResponse(_binary_body(runtime, job), media_type=CONTENT_TYPES[synth.format])

    async def bidirectional(websocket: WebSocket) -> None:
        if not runtime.ready.is_set() or runtime.scheduler is None or runtime.catalog is None:
            await websocket.close(code=1013, reason="model is loading")
            return
        await websocket.accept()
        await Session(websocket, runtime.scheduler, runtime.catalog, config.frame_bytes).run()

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


async def _binary_body(runtime: Runtime, job: Job) -> AsyncIterator[bytes]:
    try:
        async for frame in audio_frames(job, runtime.config.frame_bytes, AudioStats()):
            yield frame
    finally:
        _release(runtime, job)


async def _sse_events(runtime: Runtime, job: Job) -> AsyncIterator[bytes]:
    request = job.request
    stats = AudioStats()
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
        try:
            async for frame in audio_frames(job, runtime.config.frame_bytes, stats):
                yield encode_event(
                    {
                        "type": "audio_chunk",
                        "seq": stats.frames - 1,
                        "data": base64.b64encode(frame).decode(),
                    }
                )
        except SynthesisFailed as exc:
            yield encode_event(ProtocolError("synthesis_failed", str(exc), request.request_id).to_json())
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


def _release(runtime: Runtime, job: Job) -> None:
    """If the client went away mid-stream, free the engine for everyone else (no-op once finished)."""
    if runtime.scheduler is not None:
        runtime.scheduler.cancel(job)
