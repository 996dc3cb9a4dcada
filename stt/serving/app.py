"""The speech-to-text container's ASGI app: the container kit's routes (container_kit/routes.py) around
`STTContainer`: `GET /ping`, `POST /invocations` (a whole clip -> JSON transcript),
`WS /invocations-bidirectional-stream` (PCM frames in, partials and finals out).

`POST /invocations` answers every bad request with typed JSON: 415 for a media type other than WAV or
PCM, 413 for a body over the clip limit (read as a stream, refused as soon as it is over), 400 for audio
it cannot read (wrong rate, channels, sample format, odd or empty PCM), 503 while the models load.
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from container_kit.app import container_app
from container_kit.body import read_body
from container_kit.errors import RequestError, error_statuses
from container_kit.routes import error_response
from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.serving.model_host import ModelHost
from stt.serving.session import Session
from stt.wire import protocol
from stt.wire.protocol import ProtocolError, parse_clip

log = logging.getLogger("stt.serving.app")

# HTTP status of each error code on `POST /invocations` (the kit's `body_too_large` 413 and `not_ready`
# 503 with them); every other code is a 400.
HTTP_STATUS = error_statuses(
    {"audio_too_long": 413, "unsupported_media_type": 415, "transcription_failed": 500}
)


def create_app(config: STTConfig) -> Starlette:
    return container_app(STTContainer(config))


class STTContainer:
    """Whisper and Silero VAD behind the kit's routes (container_kit/container.py's `Container`): they
    call it only once the model host is ready, so its models are loaded."""

    statuses = HTTP_STATUS

    def __init__(self, config: STTConfig) -> None:
        self.config = config
        self.host = ModelHost(config)

    def health(self) -> dict[str, object]:
        transcriber = self.host.transcriber
        assert transcriber is not None, "loaded before ready"
        return {"status": "ok", "model": transcriber.model_dir.name, "device": transcriber.device}

    async def invoke(self, request: Request) -> Response:
        try:
            body = await read_body(request, self.config.max_body_bytes)
            samples = parse_clip(body, request.headers.get("content-type"), self.config.max_clip_s)
        except RequestError as error:
            return error_response(error, HTTP_STATUS)
        try:
            transcript = await self.host.transcribe_clip(samples)
        except Exception as exc:
            log.exception("transcription failed")
            error = ProtocolError("transcription_failed", f"transcription failed: {type(exc).__name__}")
            return error_response(error, HTTP_STATUS)
        duration_ms = round(len(samples) * 1000 / STT_SAMPLE_RATE)
        return JSONResponse(protocol.transcript(transcript.text, transcript.words, duration_ms))

    async def converse(self, websocket: WebSocket) -> None:
        await Session(websocket, self.host, self.config).run()
