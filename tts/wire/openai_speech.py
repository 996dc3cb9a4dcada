"""OpenAI's speech vocabulary (`POST /v1/audio/speech`), the one module that speaks it: the request
body read into our typed request, and the answers and errors built the way OpenAI's clients parse them.

The container receives it on `POST /invocations` (SageMaker passes on nothing else), recognised by its
shape: `input` with `voice` or `model`, and no `text` (`is_speech_body`). Everything past the reading
is our own path: the same speech text, engine, scheduler, encoders and error codes as our messages.

Fields (OpenAI's names and defaults):
- `input`: the text; `voice`: a voice or a blend `a(2)+b(1)` (`tts/voices.py`); `model`: ignored here
  (the gateway reads it to choose the endpoint).
- `response_format`: mp3 (the default), opus, aac, flac, wav, pcm (24 kHz mono s16le, as OpenAI's).
- `speed`: OpenAI takes 0.25-4.0; Kokoro speaks 0.5-2.0 intelligibly (`protocol.MIN_SPEED` /
  `MAX_SPEED`), so a speed within OpenAI's range is clamped to ours (0.25 is spoken at 0.5, 4.0 at
  2.0) and one outside OpenAI's range is an `invalid_speed` error, as OpenAI answers it.
- `stream_format`: `audio` (the default: the encoded bytes as they are made) or `sse` (OpenAI's
  `speech.audio.delta` events with base64 audio, then one `speech.audio.done` with `usage`).
- `instructions`: accepted and ignored: Kokoro has no instruction-following voice model (OpenAI's
  `gpt-4o-mini-tts` has; `tts-1` ignores it too).
- Extras, as Kokoro-FastAPI names them: `lang_code` (our `lang`) and `return_timestamps` (captions:
  the whole audio in base64 beside each word as the client wrote it, with its start and end in
  seconds: Kokoro-FastAPI's `/dev/captioned_speech` answer).

Errors: `{"error": {"message", "type", "param", "code"}}`, `code` our stable error code, `param` the
OpenAI field it is about.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from container_kit.errors import RequestError
from tts.text.timings import TimedWords
from tts.wire.protocol import MAX_SPEED, MIN_SPEED, Catalog, ProtocolError, Synthesize, synthesize_request

RESPONSE_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
DEFAULT_RESPONSE_FORMAT = "mp3"
STREAM_FORMATS = ("audio", "sse")
OPENAI_MIN_SPEED, OPENAI_MAX_SPEED = 0.25, 4.0

# Which OpenAI field each of our error codes is about.
_PARAM = {
    "missing_text": "input",
    "empty_text": "input",
    "text_too_long": "input",
    "nothing_to_speak": "input",
    "invalid_unicode": "input",
    "unknown_voice": "voice",
    "invalid_voice_blend": "voice",
    "unknown_format": "response_format",
    "invalid_speed": "speed",
    "unknown_language": "lang_code",
    "invalid_stream_format": "stream_format",
}
_FIELD = {"input": "text", "voice": "voice", "response_format": "format", "lang_code": "lang"}


@dataclass(frozen=True)
class SpeechRequest:
    synthesize: Synthesize
    stream_format: str
    captioned: bool
    """`return_timestamps`: one JSON answer with the audio and the words (Kokoro-FastAPI's captions)."""

    @property
    def transport(self) -> str:
        """Our transport for it: captions and SSE need the word and audio events, `audio` the bytes."""
        return "sse" if self.captioned or self.stream_format == "sse" else "binary"


def is_speech_body(obj: dict[str, object]) -> bool:
    """OpenAI's speech body, told from our message (`text`) by its shape."""
    return "input" in obj and ("voice" in obj or "model" in obj) and "text" not in obj


def _given(obj: dict[str, object], name: str, default: str) -> object:
    value = obj.get(name)
    return default if value is None else value


def parse_speech(obj: dict[str, object], catalog: Catalog) -> SpeechRequest:
    """An OpenAI speech body -> our request, or ProtocolError (the same codes as our messages)."""
    # Only an absent (or null) member takes the default: `false`, `0`, `[]` or "" are a client's
    # mistake, and were silently the default.
    stream_format = _given(obj, "stream_format", "audio")
    if not isinstance(stream_format, str) or stream_format not in STREAM_FORMATS:
        raise ProtocolError(
            "invalid_stream_format", f"'stream_format' must be one of {', '.join(STREAM_FORMATS)}"
        )
    fmt = _given(obj, "response_format", DEFAULT_RESPONSE_FORMAT)
    if not isinstance(fmt, str) or fmt not in RESPONSE_FORMATS:
        raise ProtocolError(
            "unknown_format",
            f"unknown response_format {str(fmt)!r:.40}; expected one of {', '.join(RESPONSE_FORMATS)}",
        )
    speed = obj.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise ProtocolError("invalid_speed", "'speed' must be a number")
    if not OPENAI_MIN_SPEED <= speed <= OPENAI_MAX_SPEED:
        raise ProtocolError("invalid_speed", f"'speed' must be within {OPENAI_MIN_SPEED}-{OPENAI_MAX_SPEED}")
    captioned = obj.get("return_timestamps", False)
    if not isinstance(captioned, bool):
        raise ProtocolError("invalid_field", "'return_timestamps' must be true or false")
    for field in ("input", "voice", "lang_code"):
        if obj.get(field) is not None and not isinstance(obj[field], str):
            raise ProtocolError("invalid_field", f"{field!r} must be a string")
    ours: dict[str, object] = {
        mine: obj[theirs] for theirs, mine in _FIELD.items() if obj.get(theirs) is not None
    }
    ours["format"] = fmt
    ours["speed"] = min(max(float(speed), MIN_SPEED), MAX_SPEED)
    ours["timestamps"] = captioned
    return SpeechRequest(synthesize_request(ours, catalog, ("binary",)), str(stream_format), captioned)


def error_body(error: RequestError, status: int) -> dict[str, object]:
    """OpenAI's error envelope for one of our errors."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {
        "error": {"message": error.message, "type": kind, "param": _PARAM.get(error.code), "code": error.code}
    }


def audio_delta(audio: bytes) -> dict[str, object]:
    return {"type": "speech.audio.delta", "audio": base64.b64encode(audio).decode()}


def audio_done(characters: int, frames: int) -> dict[str, object]:
    """The last SSE event. OpenAI counts model tokens; Kokoro has none to bill, so `usage` counts the
    characters spoken in and the audio frames sent out."""
    return {
        "type": "speech.audio.done",
        "usage": {"input_tokens": characters, "output_tokens": frames, "total_tokens": characters + frames},
    }


def stream_error(error: RequestError) -> dict[str, object]:
    """A failure after the SSE stream began: an `error` event in OpenAI's envelope."""
    return {"type": "error", **error_body(error, 500)}


def captioned(request: Synthesize, audio: bytes, words: list[TimedWords]) -> dict[str, object]:
    """Kokoro-FastAPI's captioned speech: the audio in base64 and every word as the client wrote it,
    start and end in seconds from the first sample."""
    return {
        "audio": base64.b64encode(audio).decode(),
        "audio_format": request.format,
        "timestamps": [
            {"word": w.text, "start_time": w.start_ms / 1000, "end_time": w.end_ms / 1000}
            for timed in words
            for w in timed.words
        ],
    }
