"""What OpenAI's audio routes answer in front of SageMaker endpoints before any container sees the
body: the gateway's vocabulary (`gateway/routes.py` serves it), in OpenAI's error envelope.

`model` names an endpoint; `tts-1` / `tts-1-hd`, OpenAI's names, mean the only endpoint when there is
exactly one. The speech body goes on unchanged (the container reads OpenAI's body itself and answers in
OpenAI's shapes, `tts/wire/openai_speech.py`); refused here is only what needs no container: a body
not JSON, not an object, without `input`, or a model that names no endpoint (a body over MAX_BODY_BYTES
is refused as it is read, routes.py). Pure: no I/O, no web framework.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

OPENAI_MODELS = ("tts-1", "tts-1-hd")
"""OpenAI's speech model names: the only endpoint, when there is exactly one."""
VOICES_REQUEST = b'{"type": "voices"}'
"""The container's voice list (`GET /v1/audio/voices`)."""
MAX_BODY_BYTES = 6 * 1024 * 1024
"""SageMaker's own payload limit for InvokeEndpoint (botocore's model: 6,291,456 bytes)."""


class OpenAIRefusal(Exception):
    """A request refused in OpenAI's error envelope, with its HTTP status."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> bytes:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        error = {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        return json.dumps({"error": error}).encode()


def endpoint_for(model: object, endpoints: Sequence[str]) -> str:
    """The endpoint `model` names (404 `model_not_found` naming the endpoints there are)."""
    if model in OPENAI_MODELS and len(endpoints) == 1:
        return endpoints[0]
    if isinstance(model, str) and model in endpoints:
        return model
    hint = f"; the endpoints are {', '.join(endpoints)}" if endpoints else "; no endpoint is in service"
    raise OpenAIRefusal(404, f"The model {model!r:.80} does not exist{hint}", "model_not_found", "model")


def speech_body(raw: bytes) -> dict[str, Any]:
    """The speech body as JSON, refused when it cannot be one (400 in OpenAI's envelope)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise OpenAIRefusal(400, "The body is not JSON", "invalid_json") from None
    if not isinstance(body, dict):
        raise OpenAIRefusal(400, "The body must be a JSON object", "not_an_object")
    if "input" not in body:
        raise OpenAIRefusal(400, "you must provide an input", "missing_text", "input")
    return body


def captioned_request(body: dict[str, Any]) -> bytes:
    """Kokoro-FastAPI's captioned speech: the same body, asking for the words' timestamps."""
    return json.dumps({**body, "return_timestamps": True}).encode()


def model_list(endpoints: Sequence[str], owned_by: str) -> dict[str, Any]:
    """`GET /v1/models`: the endpoints, and OpenAI's names when there is exactly one."""
    ids = [*endpoints, *(OPENAI_MODELS if len(endpoints) == 1 else ())]
    created = int(time.time())
    return {
        "object": "list",
        "data": [{"id": i, "object": "model", "created": created, "owned_by": owned_by} for i in ids],
    }
