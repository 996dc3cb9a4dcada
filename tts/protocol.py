"""Parsing and validating client messages into typed requests, with typed errors.

The same rules serve the WebSocket session (TEXT or BINARY frames carrying UTF-8 JSON) and
`POST /invocations` (a JSON body), so a message is valid or invalid the same way on both paths.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from tts.encoders import FORMATS

MIN_SPEED, MAX_SPEED = 0.5, 2.0
TRANSPORTS = ("binary", "sse")


class ProtocolError(ValueError):
    """A message the container cannot act on; `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {"type": "error", "code": self.code, "message": self.message}
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
    text: str
    voice: str
    speed: float
    format: str
    lang: str
    request_id: str


@dataclass(frozen=True)
class Cancel:
    request_id: str | None


@dataclass(frozen=True)
class Close:
    pass


Message = Synthesize | Cancel | Close


def _decode(raw: str | bytes) -> dict[str, object]:
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("invalid_utf8", f"message is not UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProtocolError("invalid_json", f"message is not JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("not_an_object", f"message must be a JSON object, got {type(obj).__name__}")
    return obj


def _optional_str(obj: dict[str, object], key: str, request_id: str | None) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError("invalid_field", f"{key!r} must be a string", request_id)
    return value


def _synthesize(obj: dict[str, object], catalog: Catalog) -> Synthesize:
    request_id = _optional_str(obj, "request_id", None) or uuid.uuid4().hex[:12]
    if "text" not in obj or obj["text"] is None:
        raise ProtocolError("missing_text", "message has no 'text'", request_id)
    text = obj["text"]
    if not isinstance(text, str):
        raise ProtocolError("invalid_field", "'text' must be a string", request_id)
    if not text.strip():
        raise ProtocolError("empty_text", "'text' is empty", request_id)
    if len(text) > catalog.max_text_chars:
        raise ProtocolError(
            "text_too_long",
            f"'text' has {len(text)} characters; the limit is {catalog.max_text_chars}",
            request_id,
        )
    voice = _optional_str(obj, "voice", request_id) or catalog.default_voice
    if voice not in catalog.voices:
        known = ", ".join(sorted(catalog.voices))
        raise ProtocolError("unknown_voice", f"unknown voice {voice!r}; available: {known}", request_id)
    speed = obj.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise ProtocolError("invalid_speed", "'speed' must be a number", request_id)
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise ProtocolError(
            "invalid_speed", f"'speed' must be within {MIN_SPEED}-{MAX_SPEED}, got {speed}", request_id
        )
    fmt = _optional_str(obj, "format", request_id) or "pcm"
    if fmt not in FORMATS:
        raise ProtocolError(
            "unknown_format", f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", request_id
        )
    lang = _optional_str(obj, "lang", request_id) or catalog.default_lang
    if lang not in catalog.languages:
        raise ProtocolError("unknown_language", f"unknown language {lang!r}", request_id)
    return Synthesize(
        text=text, voice=voice, speed=float(speed), format=fmt, lang=lang, request_id=request_id
    )


def parse_message(raw: str | bytes, catalog: Catalog) -> Message:
    """One WebSocket message (text or binary frame) -> a typed message, or ProtocolError."""
    obj = _decode(raw)
    kind = obj.get("type", "synthesize")
    if kind == "synthesize":
        return _synthesize(obj, catalog)
    if kind == "cancel":
        return Cancel(_optional_str(obj, "request_id", None))
    if kind == "close":
        return Close()
    raise ProtocolError(
        "unknown_type", f"unknown message type {kind!r}; expected synthesize, cancel or close"
    )


def parse_invocation(body: bytes, catalog: Catalog) -> tuple[Synthesize, str]:
    """A `POST /invocations` body -> the request and its transport (`binary` or `sse`)."""
    obj = _decode(body)
    request = _synthesize(obj, catalog)
    transport = obj.get("transport", "binary")
    if transport not in TRANSPORTS:
        raise ProtocolError(
            "invalid_transport",
            f"unknown transport {transport!r}; expected binary or sse",
            request.request_id,
        )
    return request, str(transport)
