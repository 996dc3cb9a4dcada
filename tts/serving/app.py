"""The container's ASGI app: `GET /ping`, `POST /invocations`, `WS /invocations-bidirectional-stream`.

The routes only glue the parts together: the protocol parses, the scheduler computes, the streaming
module frames and encodes, the session runs a WebSocket conversation.

`POST /invocations` answers every bad request with typed JSON before any audio: 415 for a media type
other than JSON, 413 for a body over `TTS_MAX_BODY_BYTES` (read as a stream, refused as soon as it is
over), 400 for a bad message, including a text that turns out to have nothing to speak (the response
starts only once the first audio frame exists). The same route reads OpenAI's speech body
(`tts/wire/openai_speech.py`, told by its shape), answered and refused in OpenAI's shapes, and
`{"type": "voices"}`, the voice list.
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
from tts.serving.metrics import publish_error
from tts.serving.model_host import ModelHost
from tts.serving.session import Session
from tts.serving.streaming import AudioStats, SynthesisFailed, audio_frames
from tts.text.timings import TimedWords
from tts.wire import openai_speech, protocol
from tts.wire.audio import frame_bytes
from tts.wire.openai_speech import SpeechRequest, is_speech_body, parse_speech
from tts.wire.protocol import ProtocolError, Synthesize, check_media_type, decode, invocation_request
from tts.wire.sse import encode_event

log = logging.getLogger("tts.serving.app")

type Frames = AsyncIterator[bytes | TimedWords]

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


def _openai_error(error: ProtocolError) -> Response:
    status = HTTP_STATUS.get(error.code, 400)
    return Response(
        json.dumps(openai_speech.error_body(error, status)), status_code=status, media_type="application/json"
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

    async def start(synth: Synthesize) -> tuple[Job, AudioStats, bytes | TimedWords | None, Frames]:
        """Submit the job and wait for its first frame, so that a failure is still a typed answer."""
        scheduler = host.scheduler
        if scheduler is None:
            raise ProtocolError("not_ready", host.load_error or "model is loading")
        owner = object()  # one request: its slot frees once its audio is computed
        job = scheduler.submit(owner, synth)
        scheduler.closed(owner)
        stats = AudioStats()
        frames = audio_frames(
            job, frame_bytes(config.frame_ms), stats, lambda: host.scheduler and host.scheduler.load
        )
        try:
            first = await anext(frames, None)
        except SynthesisFailed as exc:
            raise ProtocolError(exc.code, str(exc), synth.request_id) from exc
        except BaseException:
            _release(host, job)
            raise
        return job, stats, first, frames

    async def invocations(request: Request) -> Response:
        if not host.ready.is_set() or host.scheduler is None or host.catalog is None:
            return _not_ready(host)
        obj: dict[str, object] | None = None
        try:
            check_media_type(request.headers.get("content-type"))
            obj = decode(await _read_body(request, config.max_body_bytes))
            if obj.get("type") == "voices":
                return JSONResponse(protocol.voice_list(host.catalog))
            speech = parse_speech(obj, host.catalog) if is_speech_body(obj) else None
            synth, transport = (speech.synthesize, "") if speech else invocation_request(obj, host.catalog)
        except ProtocolError as error:
            publish_error(error.code)  # a synthesis failure is counted where it is found (streaming)
            return _openai_error(error) if obj is not None and is_speech_body(obj) else _error(error)
        try:
            job, stats, first, frames = await start(synth)
        except ProtocolError as error:  # the synthesis failed before its first audio: counted there
            return _openai_error(error) if speech else _error(error)
        if speech:
            return await openai_response(speech, job, stats, first, frames)
        if transport == "sse":
            return StreamingResponse(
                _sse_events(host, job, first, frames, stats), media_type="text/event-stream"
            )
        return StreamingResponse(_binary_body(host, job, first, frames), media_type=MEDIA_TYPES[synth.format])

    async def openai_response(
        speech: SpeechRequest, job: Job, stats: AudioStats, first: bytes | TimedWords | None, frames: Frames
    ) -> Response:
        if speech.captioned:
            return await _captioned(host, job, first, frames)
        if speech.stream_format == "sse":
            return StreamingResponse(
                _openai_sse_events(host, job, first, frames, stats), media_type="text/event-stream"
            )
        media_type = MEDIA_TYPES[speech.synthesize.format]
        return StreamingResponse(_binary_body(host, job, first, frames), media_type=media_type)

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


async def _openai_sse_events(
    host: ModelHost, job: Job, first: bytes | TimedWords | None, frames: Frames, stats: AudioStats
) -> AsyncIterator[bytes]:
    """OpenAI's `stream_format: sse`: a `speech.audio.delta` per frame, then `speech.audio.done`."""
    try:
        try:
            async for frame in _prepend(first, frames):
                if isinstance(frame, bytes):
                    yield encode_event(openai_speech.audio_delta(frame))
        except SynthesisFailed as exc:
            error = ProtocolError(exc.code, str(exc), job.request.request_id)
            yield encode_event(openai_speech.stream_error(error))
            return
        yield encode_event(openai_speech.audio_done(len(job.request.text), stats.frames))
    finally:
        _release(host, job)


async def _captioned(host: ModelHost, job: Job, first: bytes | TimedWords | None, frames: Frames) -> Response:
    """The whole audio and its words in one JSON answer (Kokoro-FastAPI's captioned speech)."""
    audio, words = bytearray(), []
    try:
        async for frame in _prepend(first, frames):
            if isinstance(frame, TimedWords):
                words.append(frame)
            else:
                audio += frame
    except SynthesisFailed as exc:
        return _openai_error(ProtocolError(exc.code, str(exc), job.request.request_id))
    finally:
        _release(host, job)
    return JSONResponse(openai_speech.captioned(job.request, bytes(audio), words))


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
