"""The Host names a local web server of ours answers: DNS rebinding refused, for every server a browser
can reach (the agent's page and API, the OpenAI gateway).

DNS rebinding lets another site's page re-point its own name at 127.0.0.1 and then talk to a local
server as if it were that site, `Origin` and all (`Host: evil.example:8080`, `Origin:
http://evil.example:8080` pass an origin check), spending what the server spends (a model call, a
synthesis on the caller's AWS account). A server bound to a loopback address answers only the names that
reach it there (`localhost`, `*.localhost`, the address itself), any IP address (rebinding needs a name),
and the names its operator adds; one bound to every interface (`0.0.0.0`: a container behind a proxy
whose Host the platform chooses) answers any name unless names are given. `HostGuard` refuses the rest
before any route sees them, with the refusal its server speaks (each server's own error envelope).

Shared by `agent` and `gateway` (tests/test_house.py's rooms), and copied into the agent's image.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

WILDCARD_BINDS = ("0.0.0.0", "::", "")
LOOPBACK_NAMES = ("localhost", ".localhost")


def host_name(host_header: str) -> str:
    """The name of a `Host` header, without its port or an IPv6 literal's brackets, lowercased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def allowed_hosts(bind: str, configured: Iterable[str]) -> tuple[str, ...] | None:
    """The names a server bound to `bind` answers (`.example` matches every subdomain); None: any."""
    names = tuple(name.strip().lower() for name in configured if name.strip())
    if "*" in names:
        return None
    if not names and bind in WILDCARD_BINDS:
        return None
    return (*names, *LOOPBACK_NAMES, host_name(bind))


def answers(host_header: str, allowed: tuple[str, ...] | None) -> bool:
    """Whether a server that answers `allowed` (allowed_hosts) answers a request naming `host_header`."""
    if allowed is None:
        return True
    name = host_name(host_header)
    try:
        ipaddress.ip_address(name)
        return True  # an address: no name another site could re-point here
    except ValueError:
        pass
    return any(name == entry or (entry.startswith(".") and name.endswith(entry)) for entry in allowed)


class HostGuard:
    """ASGI middleware: a request or WebSocket for a name the server is not reached by is refused before
    any route sees it: with `refusal(host_header)`, its server's own answer; a WebSocket upgrade with HTTP
    403 (closed before it is accepted)."""

    def __init__(
        self, app: ASGIApp, allowed: tuple[str, ...] | None, refusal: Callable[[str], Response]
    ) -> None:
        self.app = app
        self.allowed = allowed
        self.refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = HTTPConnection(scope).headers.get("host", "")
        if answers(host, self.allowed):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
        else:
            await self.refusal(host)(scope, receive, send)
