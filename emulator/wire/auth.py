"""SigV4 on every AWS service: one check that runs before any route when keys are configured.

`install(app, config)` adds it to the app, so a service's routes get it by being registered, with no
code of their own. The body-carrying operations (control plane, InvokeEndpoint, the response stream,
Bedrock) are checked over the hash of the body actually received; a view marked `@event_stream_input`
(the bidirectional stream) must declare `STREAMING-AWS4-HMAC-SHA256-EVENTS`, and its events carry their
own signature chain, which the bidirectional stream verifies with `signature()`. A WebSocket upgrade
(AgentCore's `/ws`) is checked the same way before its route runs: signed in its headers over an empty
body, or presigned in its query (what a browser can carry). A refusal is an `AwsError` that the route's
blueprint renders in its protocol's envelope (before a WebSocket is accepted, as its HTTP answer).

What the headers alone show (no Authorization, a malformed one, an unknown key, a stale date) is
refused before a byte of the body is read, and the body is then read only within its route's limit
(emulator.wire.bodies): an unsigned or oversized upload costs no memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quart import Quart, current_app, g, request, websocket

from emulator.config import EmulatorConfig
from emulator.wire import bodies
from emulator.wire.sigv4 import Signed, check_headers, presigned, verify_presigned, verify_request

OPERATOR_PREFIX = "/_emulator/"
"""Not an AWS API (the operator view): never signed."""


def event_stream_input[View: Callable[..., Any]](view: View) -> View:
    """Mark a view whose request body is a signed event stream, read while the response streams."""
    view.event_stream_input = True  # type: ignore[attr-defined]
    return view


def install(app: Quart, config: EmulatorConfig) -> None:
    """Verify every AWS request's signature before its route runs (nothing when no keys are set)."""

    @app.before_request
    async def check_signature() -> None:
        if not config.sigv4_keys or request.path.startswith(OPERATOR_PREFIX):
            return
        view = current_app.view_functions.get(request.endpoint or "")
        check_headers(config.sigv4_keys, list(request.headers.items()))
        bodies.apply_limit()
        streaming = getattr(view, "event_stream_input", False)
        raw_path = request.scope.get("raw_path") or request.path.encode()
        g.signed = verify_request(
            config.sigv4_keys,
            method=request.method,
            raw_path=raw_path.decode("latin-1"),
            raw_query=request.query_string.decode("latin-1"),
            headers=list(request.headers.items()),
            body=None if streaming else await request.get_data(),
        )

    @app.before_websocket
    async def check_upgrade_signature() -> None:
        if not config.sigv4_keys:
            return
        raw_path = (websocket.scope.get("raw_path") or websocket.path.encode()).decode("latin-1")
        raw_query = websocket.query_string.decode("latin-1")
        headers = list(websocket.headers.items())
        signed = dict(method="GET", raw_path=raw_path, raw_query=raw_query, headers=headers)
        if presigned(raw_query):
            g.signed = verify_presigned(config.sigv4_keys, **signed)
        else:
            g.signed = verify_request(config.sigv4_keys, **signed, body=b"")


def signature() -> Signed | None:
    """The current request's verified signature (None when verification is off)."""
    return g.get("signed")
