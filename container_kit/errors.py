"""Typed JSON errors: `{"type": "error", "code": ..., "message": ...}`, with a stable `code` that a table
maps to the HTTP status of `POST /invocations` (every code not in it is a 400: the client's mistake).

The kit raises two codes of its own (`KIT_STATUSES`); each container adds its own codes to them with
`error_statuses`, and its wire's error type subclasses `RequestError`, so what a container catches at its
boundary (`except RequestError`) includes what the kit raised. No web framework is imported here: the wire
modules that raise these load where starlette is not (the GPU check's machine); `routes.error_response`
answers them over HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping

KIT_STATUSES = {
    "body_too_large": 413,  # body.read_body
    "not_ready": 503,  # routes: the model is loading, or did not load
}


class RequestError(ValueError):
    """A request the container cannot act on; `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, object]:
        return {"type": "error", "code": self.code, "message": self.message}


def error_statuses(codes: Mapping[str, int]) -> dict[str, int]:
    """The kit's codes and a container's `codes`, which may not give a kit code another status."""
    clash = sorted(code for code, status in codes.items() if KIT_STATUSES.get(code, status) != status)
    if clash:
        raise ValueError(f"{', '.join(clash)}: the kit answers these with {KIT_STATUSES}")
    return {**KIT_STATUSES, **codes}
