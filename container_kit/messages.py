"""What every container's wire does first with a client's message: its bytes read as UTF-8 (or the typed
`invalid_utf8`), and a client's value quoted in an error message so that no reply can carry what it
cannot encode or grow with what the client sent."""

from __future__ import annotations

from container_kit.errors import RequestError

SHOWN_CHARS = 40
"""The most of a client's value an error message quotes."""


def message_text(raw: str | bytes, error: type[RequestError] = RequestError) -> str:
    """`raw` as text; bytes that are not UTF-8 raise `error` (the container's wire error type, so that
    its parser raises only its own) with code `invalid_utf8`."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error("invalid_utf8", f"message is not UTF-8 (byte {exc.start})") from None


def shown(value: object) -> str:
    """A client's value quoted in an error message: ASCII-safe (repr) and at most SHOWN_CHARS long."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text)} chars)"
