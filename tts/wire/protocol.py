"""The container's wire vocabulary: client messages parsed and validated into typed requests (with
typed errors), and every message the container sends back, built here.

The same rules serve the WebSocket session (TEXT or BINARY frames carrying UTF-8 JSON) and
`POST /invocations` (a JSON body), so a message is valid or invalid the same way on both paths.
Whatever the bytes, `parse_message` and `parse_invocation` return a message or raise ProtocolError:
huge integers, deep nesting, NaN, lone surrogates and control characters included. Every value a
reply echoes (`request_id`, quoted field values) is valid Unicode and short.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from dataclasses import dataclass

from container_kit.errors import RequestError
from container_kit.messages import message_text, shown
from facts import AUDIO_FORMATS, CHANNELS, SAMPLE_RATE
from tts.text.speech_text import speech_text
from tts.text.timings import TimedWords
from tts.voices import VoiceError, canonical_voice, voice_info

MIN_SPEED, MAX_SPEED = 0.5, 2.0
TRANSPORTS = ("binary", "sse")
WEBSOCKET_TRANSPORTS = ("binary",)
MAX_REQUEST_ID_CHARS = 256
# `POST /invocations` media types read as the JSON message. boto3 sends no Content-Type unless the
# caller sets `ContentType`, and generic SageMaker serializers label raw bytes octet-stream or text/plain.
JSON_MEDIA_TYPES = ("application/json", "application/octet-stream", "text/plain")
# Unicode categories that can be spoken (letters, numbers, symbols, punctuation); a text without any
# (only spaces, control, format or private-use characters) has nothing to speak.
_SPEAKABLE = frozenset("LNSP")


class ProtocolError(RequestError):
    """A message the container cannot act on (the kit's typed error), naming the request it answers."""

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(code, message)
        self.request_id = request_id

    def to_json(self) -> dict[str, object]:
        body = super().to_json()
        if self.request_id is not None:
            body["request_id"] = self.request_id
        return body


@dataclass(frozen=True)
class Catalog:
    """What a message may ask for: the loaded voices and languages, the defaults and the limits."""

    voices: frozenset[str]
    languages: frozenset[str]
    default_voice: str
    default_lang: str
    max_text_chars: int


@dataclass(frozen=True)
class Synthesize:
    text: str  # what is spoken: the speech text of what the client wrote
    voice: str
    speed: float
    format: str
    lang: str
    request_id: str
    written: str | None = None
    """The text as the client wrote it, kept when it asked for word timings (`"timestamps": true`):
    the `words` frames name words as written."""

    @property
    def timestamps(self) -> bool:
        return self.written is not None


@dataclass(frozen=True)
class Cancel:
    request_id: str | None


@dataclass(frozen=True)
class Close:
    pass


@dataclass(frozen=True)
class Voices:
    """`{"type": "voices"}`: the voice list (`voice_list`); on `POST /invocations`, the one route
    SageMaker passes on, so the OpenAI `/v1/audio/voices` in front of an endpoint can ask for it."""


Message = Synthesize | Cancel | Close


def _reject_constant(name: str) -> float:
    raise ProtocolError("invalid_json", f"message is not JSON: {name} is not a JSON number")


def decode(raw: str | bytes) -> dict[str, object]:
    text = message_text(raw, ProtocolError)
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except ProtocolError:
        raise
    except json.JSONDecodeError as exc:
        raise ProtocolError("invalid_json", f"message is not JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise ProtocolError("invalid_json", "message is nested too deeply") from None
    except ValueError:  # an integer beyond Python's digit limit (sys.get_int_max_str_digits)
        raise ProtocolError("invalid_json", "message has a number with too many digits") from None
    if not isinstance(obj, dict):
        raise ProtocolError("not_an_object", f"message must be a JSON object, got {type(obj).__name__}")
    return obj


def _valid_unicode(value: str, key: str, request_id: str | None) -> str:
    """JSON escapes can smuggle lone surrogates (`\\ud800`) that no UTF-8 reply or G2P can carry."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolError(
            "invalid_unicode", f"{key!r} has a lone surrogate at index {exc.start}", request_id
        ) from None
    return value


def _optional_str(obj: dict[str, object], key: str, request_id: str | None) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError("invalid_field", f"{key!r} must be a string", request_id)
    return value


def _request_id(obj: dict[str, object]) -> str:
    request_id = _optional_str(obj, "request_id", None)
    if not request_id:
        return uuid.uuid4().hex[:12]
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise ProtocolError(
            "invalid_field",
            f"'request_id' has {len(request_id)} characters; the limit is {MAX_REQUEST_ID_CHARS}",
        )
    return _valid_unicode(request_id, "request_id", None)


def _readable_text(text: str, request_id: str) -> str:
    """Non-empty valid Unicode; control characters but the newline read as spaces (espeak-ng stops at a
    NUL; lines are kept for `speech_text`, which reads headings and list items line by line)."""
    if not text.strip():
        raise ProtocolError("empty_text", "'text' is empty", request_id)
    _valid_unicode(text, "text", request_id)
    return "".join(" " if unicodedata.category(ch) == "Cc" and ch != "\n" else ch for ch in text)


def _spoken_text(text: str, lang: str, request_id: str) -> str:
    """What `text` says aloud (`speech_text`: no markdown, emoji or URLs read out), as one line (each of
    its lines ends a sentence already); some character of it must be speakable."""
    spoken = " ".join(speech_text(text, lang).splitlines())
    if not any(unicodedata.category(ch)[0] in _SPEAKABLE for ch in spoken):
        raise ProtocolError(
            "nothing_to_speak",
            "'text' has nothing to say aloud: no letters, digits or punctuation outside formatting, code "
            "blocks and emoji",
            request_id,
        )
    return spoken


def synthesize_request(obj: dict[str, object], catalog: Catalog, transports: tuple[str, ...]) -> Synthesize:
    """A decoded message object -> the typed request, or ProtocolError (the rules of every transport,
    the OpenAI speech body's included: `openai_speech.py` maps its fields onto these)."""
    request_id = _request_id(obj)
    if "text" not in obj or obj["text"] is None:
        raise ProtocolError("missing_text", "message has no 'text'", request_id)
    text = obj["text"]
    if not isinstance(text, str):
        raise ProtocolError("invalid_field", "'text' must be a string", request_id)
    if len(text) > catalog.max_text_chars:
        raise ProtocolError(
            "text_too_long",
            f"'text' has {len(text)} characters; the limit is {catalog.max_text_chars}",
            request_id,
        )
    text = _readable_text(text, request_id)
    voice = _optional_str(obj, "voice", request_id) or catalog.default_voice
    try:
        voice = canonical_voice(voice, catalog.voices)
    except VoiceError as error:
        raise ProtocolError(error.code, str(error), request_id) from None
    speed = obj.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise ProtocolError("invalid_speed", "'speed' must be a number", request_id)
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ProtocolError(
            "invalid_speed", f"'speed' must be within {MIN_SPEED}-{MAX_SPEED}, got {shown(speed)}", request_id
        )
    fmt = _optional_str(obj, "format", request_id) or "pcm"
    if fmt not in AUDIO_FORMATS:
        raise ProtocolError(
            "unknown_format",
            f"unknown format {shown(fmt)}; expected one of {', '.join(AUDIO_FORMATS)}",
            request_id,
        )
    lang = _optional_str(obj, "lang", request_id) or catalog.default_lang
    if lang not in catalog.languages:
        raise ProtocolError("unknown_language", f"unknown language {shown(lang)}", request_id)
    timestamps = obj.get("timestamps")
    if timestamps is not None and not isinstance(timestamps, bool):
        raise ProtocolError("invalid_field", "'timestamps' must be true or false", request_id)
    spoken = _spoken_text(text, lang, request_id)
    transport = obj.get("transport", transports[0])
    if transport not in transports:
        raise ProtocolError(
            "invalid_transport",
            f"unknown transport {shown(transport)}; expected {' or '.join(transports)}",
            request_id,
        )
    return Synthesize(
        text=spoken,
        voice=voice,
        speed=float(speed),
        format=fmt,
        lang=lang,
        request_id=request_id,
        written=text if timestamps else None,
    )


def parse_message(raw: str | bytes, catalog: Catalog) -> Message:
    """One WebSocket message (text or binary frame) -> a typed message, or ProtocolError."""
    obj = decode(raw)
    kind = obj.get("type", "synthesize")
    if kind == "synthesize":
        return synthesize_request(obj, catalog, WEBSOCKET_TRANSPORTS)
    if kind == "cancel":
        request_id = _optional_str(obj, "request_id", None)
        return Cancel(None if request_id is None else _valid_unicode(request_id, "request_id", None))
    if kind == "close":
        return Close()
    raise ProtocolError(
        "unknown_type", f"unknown message type {shown(kind)}; expected synthesize, cancel or close"
    )


def check_media_type(content_type: str | None) -> None:
    """`POST /invocations` reads JSON: absent or one of JSON_MEDIA_TYPES (parameters such as charset
    ignored), else `unsupported_media_type`."""
    if content_type is None:
        return
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in JSON_MEDIA_TYPES:
        raise ProtocolError(
            "unsupported_media_type",
            f"Content-Type {shown(media_type)} is not accepted; send application/json",
        )


def parse_invocation(body: bytes, catalog: Catalog) -> tuple[Synthesize, str]:
    """A `POST /invocations` body -> the request and its transport (`binary` or `sse`)."""
    return invocation_request(decode(body), catalog)


def invocation_request(obj: dict[str, object], catalog: Catalog) -> tuple[Synthesize, str]:
    """A decoded `POST /invocations` object in our own vocabulary -> the request and its transport."""
    request = synthesize_request(obj, catalog, TRANSPORTS)
    transport = str(obj.get("transport", TRANSPORTS[0]))
    if request.timestamps and transport != "sse":
        raise ProtocolError(
            "invalid_field",
            '\'timestamps\' needs "transport": "sse": a binary body carries audio only',
            request.request_id,
        )
    return request, transport


# Outbound messages (WebSocket control frames; the SSE transport of POST /invocations) ----------------


def synthesis_start(request: Synthesize) -> dict[str, object]:
    return {
        "type": "synthesis_start",
        "request_id": request.request_id,
        "voice": request.voice,
        "format": request.format,
        "sample_rate": SAMPLE_RATE,
        "channels": CHANNELS,
    }


def synthesis_complete(
    request: Synthesize, duration_s: float, audio_bytes: int, segments: int, elapsed_s: float
) -> dict[str, object]:
    return {
        "type": "synthesis_complete",
        "request_id": request.request_id,
        "duration_s": duration_s,
        "audio_bytes": audio_bytes,
        "segments": segments,
        "elapsed_s": round(elapsed_s, 3),
    }


def words(request: Synthesize, timed: TimedWords) -> dict[str, object]:
    """One segment's words as written, each with its start and end in ms from the request's first
    audio sample; sent before the segment's first audio (`tts/text/timings.py`)."""
    return {
        "type": "words",
        "request_id": request.request_id,
        "words": [{"text": w.text, "start_ms": w.start_ms, "end_ms": w.end_ms} for w in timed.words],
    }


def voice_list(catalog: Catalog) -> dict[str, object]:
    """Every loaded voice: `voices` as Kokoro-FastAPI's `/v1/audio/voices` lists them (names), `data`
    with each one's language and gender where Kokoro's naming says (`tts/voices.py`)."""
    names = sorted(catalog.voices)
    return {
        "type": "voices",
        "voices": names,
        "default": catalog.default_voice,
        "data": [voice_info(name).to_json() for name in names],
    }


def queued(request: Synthesize, position: int) -> dict[str, object]:
    """The replica is serving all the sessions it keeps gap-free: this one waits for a slot, `position`
    in line (1: next); its audio follows when a slot frees. Sent again whenever the place changes."""
    return {"type": "queued", "request_id": request.request_id, "position": position}


def cancelled(request_ids: list[str]) -> dict[str, object]:
    return {"type": "cancelled", "request_ids": request_ids}


def audio_stream_start(request: Synthesize) -> dict[str, object]:
    return {**synthesis_start(request), "type": "audio_stream_start"}


def audio_chunk(seq: int, data: str) -> dict[str, object]:
    """One SSE audio event; `data` is the frame in base64."""
    return {"type": "audio_chunk", "seq": seq, "data": data}


def audio_stream_end(request: Synthesize, total_chunks: int, duration_s: float) -> dict[str, object]:
    return {
        "type": "audio_stream_end",
        "request_id": request.request_id,
        "total_chunks": total_chunks,
        "duration_s": duration_s,
    }
