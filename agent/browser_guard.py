"""What the agent's HTTP surface does about browsers, which visit other sites while it runs.

The page (`GET /`) is sent with a Content-Security-Policy that allows its own inline script and style
by their SHA-256 (computed here from the page, so an edit cannot leave a stale hash), its own origin's
scripts (the microphone's worklet) and nothing else: no other site's script, no `unsafe-inline`,
requests only to its own origin, never framed (with
X-Frame-Options for browsers that predate frame-ancestors), its type never sniffed.

`POST /invocations` refuses what another site's page can make a browser send without a CORS preflight
(a `text/plain` or form POST): such a request cannot read the answer, but the turn would run, cost a
model call and speak. A browser names the page that sent it: `Origin` (every current browser sends it
on a POST) and `Sec-Fetch-Site`. A request whose `Origin` is not the agent's own, or that the browser
calls cross-site or same-site, is refused with 403 before its body is read; the agent's own page, and
clients that are not browsers (curl, boto3 through AgentCore, which does not pass `Origin` on), send
neither and are served. `WS /ws` gets the same check on its upgrade request: browsers let any page open
a WebSocket anywhere, so another site's page could otherwise talk to the agent through the visitor's
browser. It is refused before the WebSocket is accepted (an HTTP 403).

The `Host` a request names is checked before anything else (host_guard.HostGuard, on every route): DNS
rebinding lets another site's page re-point its own name at the agent and talk to it `Origin` and all.
An agent bound to a loopback address answers only the names that reach it there, any IP address, and
the names `AGENT_ALLOWED_HOSTS` adds; one bound to every interface (`0.0.0.0`: a container, behind
AgentCore's proxy, whose Host the platform chooses) answers any name unless `AGENT_ALLOWED_HOSTS` lists
them. Another name gets a typed 400 (`unknown_host`, `host_refusal`), and a WebSocket upgrade a 403,
before a turn or a model call.
"""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse

_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)
FOREIGN_FETCH_SITES = ("cross-site", "same-site")
NOSNIFF = {"X-Content-Type-Options": "nosniff"}


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def page_headers(html: str) -> dict[str, str]:
    """The security headers for `html`, whose inline `<script>` and `<style>` blocks are allowed by
    their hashes (a `style="..."` attribute would not be: the page has none)."""
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for kind, body in _INLINE.findall(html):
        hashes[kind].append(_sha256(body))
    policy = [
        "default-src 'none'",
        # 'self': the microphone's AudioWorklet module (/capture.js), which no hash can allow (a
        # worklet's module is fetched, not inline); the agent serves no script but its own.
        "script-src 'self' " + " ".join(hashes["script"]),
        "style-src " + " ".join(hashes["style"] or ["'none'"]),
        "connect-src 'self'",
        "img-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
    return {
        "Content-Security-Policy": "; ".join(policy),
        **NOSNIFF,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
    }


# A WebSocket's page is on the http(s) origin its ws(s) URL belongs to.
_PAGE_SCHEME = {"ws": "http", "wss": "https"}


def foreign_origin(connection: HTTPConnection) -> str | None:
    """Why a request (or WebSocket upgrade) comes from another site's page; None when it does not."""
    origin = connection.headers.get("origin")
    scheme = _PAGE_SCHEME.get(connection.url.scheme, connection.url.scheme)
    own = f"{scheme}://{connection.headers.get('host', '')}".lower()
    if origin is not None and origin.lower() != own:
        return f"the request comes from the page at {origin!r}, not from this agent's own page ({own})"
    if connection.headers.get("sec-fetch-site", "").lower() in FOREIGN_FETCH_SITES:
        return "the browser says the request comes from another site's page"
    return None


def cross_origin_refusal(request: HTTPConnection) -> JSONResponse | None:
    """403 with a typed body for a request another site's page made a browser send; None otherwise."""
    reason = foreign_origin(request)
    if reason is None:
        return None
    return JSONResponse(
        {"error": "Forbidden", "code": "cross_origin", "details": f"{reason}: only the agent's page may ask"},
        status_code=403,
        headers=NOSNIFF,
    )


def host_refusal(host_header: str) -> JSONResponse:
    """The agent's answer to a `Host` it is not reached by (host_guard.HostGuard)."""
    reason = (
        f"the request names the host {host_header[:100]!r}, which is not a name this agent is reached by "
        "(a page of another site whose name points here); AGENT_ALLOWED_HOSTS adds names"
    )
    body = {"error": "Bad Request", "code": "unknown_host", "details": reason}
    return JSONResponse(body, status_code=400, headers=NOSNIFF)
