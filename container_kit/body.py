"""A `POST /invocations` body, read as a stream: a body over the container's limit is refused as soon as
it is over (`body_too_large`, 413), before the rest is read, and at once when its Content-Length says so,
so that no client holds a replica's memory with an endless body."""

from __future__ import annotations

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
