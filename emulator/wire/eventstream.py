"""The AWS event-stream codec (application/vnd.amazon.eventstream), the one used by every service.

SageMaker's response streams, its bidirectional stream (both directions, including the signed
envelopes) and Bedrock's ConverseStream all frame their events this way:

    total_length u32 | headers_length u32 | prelude_crc u32 | headers | payload | message_crc u32

Bytes arrive split or merged arbitrarily (HTTP/2 DATA frames, chunked HTTP/1.1), so decoding is
incremental: feed whatever arrived, take out every complete message.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

HeaderValue = bool | int | bytes | str | datetime | uuid.UUID

_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
MAX_HEADERS_LENGTH = 128 * 1024
MAX_PAYLOAD_LENGTH = 16 * 1024 * 1024
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class EventStreamError(ValueError):
    """The bytes are not a well-formed event-stream message (bad CRC, length or header)."""


@dataclass(frozen=True)
class Int8:
    """An explicitly typed header value (plain ints encode as int32)."""

    value: int


@dataclass(frozen=True)
class Int16:
    value: int


@dataclass(frozen=True)
class Int64:
    value: int


@dataclass(frozen=True)
class Message:
    headers: dict[str, HeaderValue] = field(default_factory=dict)
    payload: bytes = b""

    @property
    def message_type(self) -> str | None:
        return _str_or_none(self.headers.get(":message-type"))

    @property
    def event_type(self) -> str | None:
        return _str_or_none(self.headers.get(":event-type"))

    @property
    def exception_type(self) -> str | None:
        return _str_or_none(self.headers.get(":exception-type"))


def _str_or_none(value: HeaderValue | None) -> str | None:
    return value if isinstance(value, str) else None


def _encode_header(name: str, value: HeaderValue | Int8 | Int16 | Int64) -> bytes:
    raw_name = name.encode()
    out = struct.pack(">B", len(raw_name)) + raw_name
    match value:
        case True:
            return out + b"\x00"
        case False:
            return out + b"\x01"
        case Int8(v):
            return out + struct.pack(">Bb", 2, v)
        case Int16(v):
            return out + struct.pack(">Bh", 3, v)
        case Int64(v):
            return out + struct.pack(">Bq", 5, v)
        case int():
            return out + struct.pack(">Bi", 4, value)
        case bytes():
            return out + struct.pack(">BH", 6, len(value)) + value
        case str():
            data = value.encode()
            return out + struct.pack(">BH", 7, len(data)) + data
        case datetime():
            return out + struct.pack(">Bq", 8, _millis(value))
        case uuid.UUID():
            return out + b"\x09" + value.bytes
    raise TypeError(f"unsupported event-stream header value for {name!r}: {type(value).__name__}")


def _millis(value: datetime) -> int:
    """A timestamp header's milliseconds since the epoch, counted exactly: through a float second,
    2107-01-01T00:00:00.006 came back as .005 (its float is 4323283200.0059995)."""
    aware = value if value.tzinfo is not None else value.astimezone()  # naive is local, as .timestamp()
    return (aware - EPOCH) // timedelta(milliseconds=1)


def encode(headers: dict[str, HeaderValue | Int8 | Int16 | Int64], payload: bytes = b"") -> bytes:
    """Encode one message."""
    raw_headers = b"".join(_encode_header(k, v) for k, v in headers.items())
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = _PRELUDE.pack(total, len(raw_headers))
    prelude += _CRC.pack(zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + _CRC.pack(zlib.crc32(body))


def event(event_type: str, payload: bytes, content_type: str = "application/json", **extra: str) -> bytes:
    """Encode a data event (`:message-type=event`) with string headers."""
    headers: dict[str, HeaderValue] = {
        ":message-type": "event",
        ":event-type": event_type,
        ":content-type": content_type,
        **extra,
    }
    return encode(headers, payload)


def exception(exception_type: str, payload: bytes) -> bytes:
    """Encode a modeled exception event (`:message-type=exception`, JSON payload)."""
    return encode(
        {
            ":message-type": "exception",
            ":exception-type": exception_type,
            ":content-type": "application/json",
        },
        payload,
    )


def _decode_headers(raw: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    pos = 0
    try:
        while pos < len(raw):
            name_len = raw[pos]
            name = raw[pos + 1 : pos + 1 + name_len].decode()
            pos += 1 + name_len
            kind = raw[pos]
            pos += 1
            value: HeaderValue
            match kind:
                case 0:
                    value = True
                case 1:
                    value = False
                case 2:
                    (value,) = struct.unpack_from(">b", raw, pos)
                    pos += 1
                case 3:
                    (value,) = struct.unpack_from(">h", raw, pos)
                    pos += 2
                case 4:
                    (value,) = struct.unpack_from(">i", raw, pos)
                    pos += 4
                case 5:
                    (value,) = struct.unpack_from(">q", raw, pos)
                    pos += 8
                case 6 | 7:
                    (length,) = struct.unpack_from(">H", raw, pos)
                    data = raw[pos + 2 : pos + 2 + length]
                    if len(data) != length:
                        raise EventStreamError("truncated header value")
                    value = data if kind == 6 else data.decode()
                    pos += 2 + length
                case 8:
                    (millis,) = struct.unpack_from(">q", raw, pos)
                    value = EPOCH + timedelta(milliseconds=millis)
                    pos += 8
                case 9:
                    value = uuid.UUID(bytes=raw[pos : pos + 16])
                    pos += 16
                case _:
                    raise EventStreamError(f"unknown header value type {kind}")
            if name in headers:
                raise EventStreamError(f"duplicate header {name!r}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed headers: {exc}") from exc
    return headers


def decode(data: bytes) -> Message:
    """Decode exactly one complete message."""
    decoder = Decoder()
    messages = decoder.feed(data)
    if len(messages) != 1 or decoder.pending:
        raise EventStreamError("expected exactly one complete message")
    return messages[0]


class Decoder:
    """Incremental decoder: `feed()` any bytes, get back the messages they completed."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held for a message that has not fully arrived."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Message]:
        self._buffer += data
        messages: list[Message] = []
        while len(self._buffer) >= 12:
            total, headers_length = _PRELUDE.unpack_from(self._buffer)
            (prelude_crc,) = _CRC.unpack_from(self._buffer, 8)
            if zlib.crc32(bytes(self._buffer[:8])) != prelude_crc:
                raise EventStreamError("prelude CRC mismatch")
            if headers_length > MAX_HEADERS_LENGTH or total - headers_length - 16 > MAX_PAYLOAD_LENGTH:
                raise EventStreamError("message exceeds the event-stream size limits")
            if total < 16 + headers_length:
                raise EventStreamError("total length shorter than its parts")
            if len(self._buffer) < total:
                break
            frame = bytes(self._buffer[:total])
            del self._buffer[:total]
            (message_crc,) = _CRC.unpack_from(frame, total - 4)
            if zlib.crc32(frame[:-4]) != message_crc:
                raise EventStreamError("message CRC mismatch")
            headers = _decode_headers(frame[12 : 12 + headers_length])
            messages.append(Message(headers, frame[12 + headers_length : -4]))
        return messages
