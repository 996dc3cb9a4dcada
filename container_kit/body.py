"""A `POST /invocations` body, read as a stream: a body over the container's limit is refused as soon as
it is over (`body_too_large`, 413), before the rest is read, and at once when its Content-Length says so,
so that no client holds a replica's memory with an endless body. `until_disconnected` is the moment its
client goes away, for an answer that waits before its response starts (a place in line)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from starlette.requests import Request

from container_kit.errors import RequestError

# A Content-Length of more digits than this is over any limit (and int() of it costs time): 10**18 bytes.
_MAX_LENGTH_DIGITS = 18


async def read_body(request: Request, limit: int) -> bytes:
    """The body, read chunk by chunk and refused as soon as it is over `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > _MAX_LENGTH_DIGITS or int(declared) > limit):
        raise RequestError("body_too_large", f"the body has {declared} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise RequestError("body_too_large", f"the body is over the limit of {limit} bytes")
    return bytes(body)


class ClientGone(Exception):
    """The client hung up before the answer's response began."""


async def until_disconnected(request: Request) -> None:
    """Returns once the client has gone away. Only after the body is read: the next ASGI message is
    then the disconnect (Starlette answers nothing else to a handler until its response starts)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected[T](request: Request, work: Awaitable[T]) -> T:
    """`work`'s result, or ClientGone (with `work` cancelled) when the client hangs up first: a request
    that waits for a slot gives up its place in line with its client, instead of being computed later
    for nobody."""
    answer = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(until_disconnected(request))
    try:
        await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if answer.done():
        return answer.result()
    answer.cancel()
    raise ClientGone()
