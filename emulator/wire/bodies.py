"""Request bodies bounded before they are read, on every route of every service.

Quart buffers a request's body as it arrives whether or not the view reads it (its receiver task
appends every chunk it is given), so a 300 MB body cost 300 MB of memory before any check ran. Every
route therefore has a limit, set as soon as the request is routed: `CONTROL_PLANE_LIMIT`, or the one
its view declares with `@body_limit(...)` (SageMaker's invocations, Bedrock, AgentCore's invocations,
the bidirectional stream). A `Content-Length` over it is refused from the headers, before a byte is
read; a body sent without one (chunked) is refused as soon as what it has buffered passes the limit,
and the rest is dropped as it arrives (`BoundedBody`). For a view that reads its body as a stream (the
bidirectional stream), the limit bounds what is buffered and not yet taken, not the stream's total.

The refusal is the view's own error (`error(limit)`, an `AwsError` in its service's envelope, or what
its stream reader reports), by default a 413 `RequestEntityTooLargeException`.

A refusal over HTTP/1.1 (an unsigned upload, one over its limit) is answered after the rest of the
body has arrived and been dropped, up to `DRAIN_LIMIT`: Hypercorn closes a connection whose request
is unfinished, and closing a socket with unread data resets it (TCP RST), which can destroy the answer
before the client reads it. Drained, the client reads its error and the connection is kept alive.
HTTP/2 ends just the one stream, so nothing is drained there.

A body botocore compressed (`Content-Encoding: gzip`, its request compression: PutMetricData's body
from 10 KB on) is bounded twice: as sent, by the route's limit, and as inflated, by INFLATED_LIMIT
(`inflate`: zlib stops at the limit), so a gzip bomb (1 MiB inflating to 1 GiB) costs about twice the
limit (zlib's buffer, then its copy: 17 MB measured) and a typed 413.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from typing import Any

from quart import Quart, Response, current_app, request
from quart.wrappers.request import Body, Request
from werkzeug.exceptions import RequestEntityTooLarge

from emulator.wire.awserrors import AwsError

CONTROL_PLANE_LIMIT = 1024 * 1024
"""1 MiB: twenty times the largest control-plane request the faces take (CloudFormation's inline
TemplateBody, at most 51,200 bytes; SageMaker's CreateModel with 32 environment values of 1 KiB)."""

DRAIN_LIMIT = 1024 * 1024 * 1024
"""At most 1 GiB of a refused HTTP/1.1 body is waited for and dropped (about a second on loopback)
before the connection is closed instead."""

INFLATED_LIMIT = 8 * 1024 * 1024
"""8 MiB inflated: PutMetricData's largest call (1,000 metrics of 150 values each, with a few dimensions)
is about 4 MB of JSON, which gzip sends in well under the 1 MiB a control plane's body may be."""

LimitError = Callable[[int], Exception]


def too_large(limit: int) -> AwsError:
    return AwsError(
        "RequestEntityTooLargeException",
        f"The request body is larger than this operation's limit of {limit} bytes.",
        413,
    )


def inflate(raw: bytes, encoding: str, limit: int = INFLATED_LIMIT) -> bytes:
    """`raw` as sent under `Content-Encoding: encoding`: gzip inflated to at most `limit` bytes (a 413
    over it, a 400 `SerializationException` for what is not gzip); any other encoding as it came."""
    if encoding.strip().lower() != "gzip":
        return raw
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        inflated = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise AwsError("SerializationException", f"the body says gzip and is not: {exc}") from exc
    if len(inflated) > limit:
        raise AwsError(
            "RequestEntityTooLargeException",
            f"The request body inflates to more than this operation's limit of {limit} bytes.",
            413,
        )
    if not inflater.eof:
        raise AwsError("SerializationException", "the body's gzip stream is cut short")
    return inflated


def body_limit[View: Callable[..., Any]](limit: int, error: LimitError = too_large) -> Callable[[View], View]:
    """Give a view its own body limit (bytes) and the error that refuses a body over it."""

    def mark(view: View) -> View:
        view.body_limit = (limit, error)  # type: ignore[attr-defined]
        return view

    return mark


class BoundedBody(Body):
    """Quart's body buffer, whose limit is lowered once the request is routed; over the limit it keeps
    nothing more and raises the route's error where the view reads it, and drops the rest as it comes
    (`ended` is set when the client has sent all of it)."""

    def __init__(self, expected_content_length: int | None, max_content_length: int | None) -> None:
        super().__init__(expected_content_length, max_content_length)
        self._error: LimitError = too_large
        self._bounded = False
        self._draining = False
        self._drained = 0
        self._appending = False
        self.ended = asyncio.Event()

    def bound(self, limit: int, error: LimitError) -> None:
        self._max_content_length, self._error, self._bounded = limit, error, True
        if self._must_raise is None and len(self._data) > limit:  # what arrived before routing
            self._refuse()
            Body.set_complete(self)

    def _refuse(self) -> None:
        self._data.clear()
        self._must_raise = self._error(self._max_content_length or 0)
        self._draining = True

    def append(self, data: bytes) -> None:
        if self._draining:
            self._drained += len(data)
            if self._drained > DRAIN_LIMIT:
                self.ended.set()
            return
        self._appending = True
        try:
            super().append(data)  # over the limit it marks the body complete, not ended
        finally:
            self._appending = False
        if isinstance(self._must_raise, RequestEntityTooLarge):
            self._refuse()

    def set_complete(self) -> None:
        super().set_complete()
        if not self._appending:
            self.ended.set()

    @property
    def bounded(self) -> bool:
        return self._bounded

    async def drain(self) -> None:
        """Wait for the rest of the body (at most DRAIN_LIMIT bytes), keeping none of it."""
        self._draining = True
        self._data.clear()
        await self.ended.wait()


class BoundedRequest(Request):
    body_class = BoundedBody


def apply_limit() -> None:
    """Bound the current request's body by its route's limit; refuse a declared length over it.
    Idempotent: the SigV4 check calls it before it reads the body, and it runs for every request."""
    body = request.body
    if not isinstance(body, BoundedBody) or body.bounded:
        return
    view = current_app.view_functions.get(request.endpoint or "")
    limit, error = getattr(view, "body_limit", (CONTROL_PLANE_LIMIT, too_large))
    if request.content_length is not None and request.content_length > limit:
        refusal = error(limit)
        raise refusal if isinstance(refusal, AwsError) else too_large(limit)
    body.bound(limit, error)


def install(app: Quart) -> None:
    """Every request of `app` gets a bounded body, bounded by its route as soon as it is routed."""
    app.request_class = BoundedRequest

    @app.before_request
    async def bound_the_body() -> None:
        apply_limit()

    @app.after_request
    async def drain_a_refused_body(response: Response) -> Response:
        body = request.body
        if (
            response.status_code >= 400
            and request.http_version.startswith("1")
            and isinstance(body, BoundedBody)
        ):
            await body.drain()
        return response
