"""SigV4 check of the current Quart request, used by every AWS face when keys are configured."""

from __future__ import annotations

from quart import request

from emulator.config import EmulatorConfig
from emulator.sigv4 import Signed, verify_request


def check_request(config: EmulatorConfig, body: bytes | None) -> Signed | None:
    """None when verification is off; else the verified signature (raises AwsError 403 if wrong).

    `body` is the full request body, or None for a streaming body whose hash is declared in
    `x-amz-content-sha256` (the bidirectional stream).
    """
    if not config.sigv4_keys:
        return None
    raw_path = request.scope.get("raw_path") or request.path.encode()
    return verify_request(
        config.sigv4_keys,
        method=request.method,
        raw_path=raw_path.decode("latin-1"),
        raw_query=request.query_string.decode("latin-1"),
        headers=list(request.headers.items()),
        body=body,
    )
