"""Server-Sent Events: the one encoder and the one buffering parser used across the project.

Every event is one JSON object with a `type` field, framed as `data: {json}\\n\\n` (the framing
Bedrock AgentCore uses for streamed entrypoints). Transports re-chunk the byte stream arbitrarily
(SageMaker PayloadParts were seen ending mid-frame), so the parser keeps whatever follows the last
blank line until the rest of that frame arrives.
"""

from __future__ import annotations

import json
from typing import Any


def encode_event(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


class SSEError(ValueError):
    """A complete SSE frame whose data is not a JSON object (not UTF-8, not JSON, too deep, too big)."""


class SSEParser:
    """Feed raw bytes as they arrive; get back the complete events (decoded JSON objects)."""

    def __init__(self) -> None:
        self._buffer = b""

    @property
    def pending(self) -> bytes:
        return self._buffer

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        *frames, self._buffer = self._buffer.split(b"\n\n")
        return [event for frame in frames if (event := self._parse(frame)) is not None]

    @staticmethod
    def _parse(frame: bytes) -> dict[str, Any] | None:
        data = [line[5:].removeprefix(b" ") for line in frame.split(b"\n") if line.startswith(b"data:")]
        if not data:
            return None  # comments (": keep-alive") and frames without data carry no event
        try:
            event = json.loads(b"\n".join(data).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SSEError(f"SSE data is not UTF-8 (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise SSEError(f"SSE data is not JSON: {exc.msg}") from None
        except RecursionError:
            raise SSEError("SSE data is not JSON: nested too deeply") from None
        except ValueError:  # an integer beyond Python's digit limit
            raise SSEError("SSE data is not JSON: a number has too many digits") from None
        if not isinstance(event, dict):
            raise SSEError("SSE data is not a JSON object")
        return event
