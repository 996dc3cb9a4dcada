"""The container's ASGI app: the container kit's routes (`GET /ping`, `POST /invocations`,
`WS /invocations-bidirectional-stream`, container_kit/routes.py) around `TTSContainer`, which answers them
once the model is ready.

The container only glues the parts together: the protocol parses, the scheduler computes, the streaming
module frames and encodes, the session runs a WebSocket conversation.

`POST /invocations` answers every bad request with typed JSON before any audio: 415 for a media type
other than JSON, 413 for a body over `TTS_MAX_BODY_BYTES` (read as a stream, refused as soon as it is
over), 400 for a bad message, including a text that turns out to have nothing to speak (the response
starts only once the first audio frame exists). The same route reads OpenAI's speech body
(`tts/wire/openai_speech.py`, told by its shape), answered and refused in OpenAI's shapes, and
`{"type": "voices"}`, the voice list.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.websockets import WebSocket

from container_kit.app import container_app
from container_kit.body import ClientGone, read_body, unless_disconnected
from container_kit.errors import RequestError, error_statuses
from container_kit.routes import error_response
from facts import MEDIA_TYPES
from tts.config import TTSConfig
from tts.scheduling.scheduler import Job, Scheduler
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

type Frames = AsyncIterator[bytes | TimedWords]
type Started = tuple[Job, AudioStats, bytes | TimedWords | None, Frames]

# HTTP status of each error code on `POST /invocations` (the kit's `body_too_large` 413 and `not_ready`
# 503 with them); every other code is a 400.
HTTP_STATUS = error_statuses({"unsupported_media_type": 415, "synthesis_failed": 500, "busy": 503})


def create_app(config: TTSConfig) -> Starlette:
    return container_app(TTSContainer(config))


def _error(error: RequestError) -> Response:
    return error_response(error, HTTP_STATUS)


def _openai_error(error: RequestError) -> Response:
    status = HTTP_STATUS.get(error.code, 400)
    return Response(
        json.dumps(openai_speech.error_body(error, status)), status_code=status, media_type="application/json"
    )


class TTSContainer:
    """Kokoro behind the kit's routes (container_kit/container.py's `Container`): they call it only once
    the model host is ready, so its engine, scheduler and catalog are loaded."""

    statuses = HTTP_STATUS

    def __init__(self, config: TTSConfig) -> None:
        self.config = config
        self.host = ModelHost(config)

    def health(self) -> dict[str, object]:
        engine, scheduler, _ = self.host.serving()
        return {"status": "ok", "engine": engine.name, "device": engine.device, "load": scheduler.load}

    async def invoke(self, request: Request) -> Response:
        _, scheduler, catalog = self.host.serving()
        obj: dict[str, object] | None = None
        try:
            check_media_type(request.headers.get("content-type"))
            obj = decode(await read_body(request, self.config.max_body_bytes))
            if obj.get("type") == "voices":
                return JSONResponse(protocol.voice_list(catalog))
            speech = parse_speech(obj, catalog) if is_speech_body(obj) else None
            synth, transport = (speech.synthesize, "") if speech else invocation_request(obj, catalog)
        except RequestError as error:
            publish_error(error.code)  # a synthesis failure is counted where it is found (streaming)
            return _openai_error(error) if obj is not None and is_speech_body(obj) else _error(error)
        try:
            started = await self._start(request, scheduler, synth)
        except RequestError as error:  # the synthesis failed before its first audio: counted there
            return _openai_error(error) if speech else _error(error)
        except ClientGone:  # gave up its place in line: nobody reads the answer
            return Response(status_code=499)
        if speech:
            return await self._openai_response(speech, started)
        job, stats, first, frames = started
        if transport == "sse":
            events = _sse_events(self.host, job, first, frames, stats)
            return StreamingResponse(events, media_type="text/event-stream")
        body = _binary_body(self.host, job, first, frames)
        return StreamingResponse(body, media_type=MEDIA_TYPES[synth.format])

    async def _start(self, request: Request, scheduler: Scheduler, synth: Synthesize) -> Started:
        """Submit the job and wait for its first frame (a place in line included), so that a failure is
        still a typed answer; a client that hangs up meanwhile cancels the job (ClientGone)."""
        owner = object()  # one request: its slot frees once its audio is computed
        job = scheduler.submit(owner, synth)
        scheduler.closed(owner)
        stats = AudioStats()
        frames = audio_frames(job, frame_bytes(self.config.frame_ms), stats, lambda: scheduler.load)
        try:
            first = await unless_disconnected(request, anext(frames, None))
        except SynthesisFailed as exc:
            raise ProtocolError(exc.code, str(exc), synth.request_id) from exc
        except BaseException:
            _release(self.host, job)
            raise
        return job, stats, first, frames

    async def _openai_response(self, speech: SpeechRequest, started: Started) -> Response:
        job, stats, first, frames = started
        if speech.captioned:
            return await _captioned(self.host, job, first, frames)
        if speech.stream_format == "sse":
            events = _openai_sse_events(self.host, job, first, frames, stats)
            return StreamingResponse(events, media_type="text/event-stream")
        media_type = MEDIA_TYPES[speech.synthesize.format]
        return StreamingResponse(_binary_body(self.host, job, first, frames), media_type=media_type)

    async def converse(self, websocket: WebSocket) -> None:
        _, scheduler, catalog = self.host.serving()
        frames, send_ahead_s = frame_bytes(self.config.frame_ms), self.config.send_ahead_ms / 1000
        await Session(websocket, scheduler, catalog, frames, send_ahead_s).run()


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
