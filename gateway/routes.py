"""OpenAI's routes over SageMaker endpoints: `POST /v1/audio/speech`, `GET /v1/audio/voices`,
`GET /v1/models`, and Kokoro-FastAPI's `POST /dev/captioned_speech`.

What is refused before the endpoint (`model`, the body's shape) is `gateway/front.py`'s; the body goes
to the endpoint unchanged: the container reads OpenAI's body itself and answers in OpenAI's shapes.
Every refusal of the gateway's own is OpenAI's envelope too (`{"error": {"message", "type", "param",
"code"}}`): a body over SageMaker's payload limit (413, refused from its `Content-Length` or as soon as
the read passes it, never kept whole), a path or method it does not serve (404, 405), a `Host` it is not
reached by (400 `unknown_host`: DNS rebinding, `host_guard.py`), an unexpected failure (500). boto3 is
synchronous, so each call and each streamed part runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.front import (
    MAX_BODY_BYTES,
    OPENAI_MODELS,
    VOICES_REQUEST,
    OpenAIRefusal,
    captioned_request,
    endpoint_for,
    model_list,
    speech_body,
)
from gateway.sagemaker import Answer, SageMakerEndpoints
from host_guard import HostGuard

JSON = "application/json"
logger = logging.getLogger("gateway")


def refused(refusal: OpenAIRefusal) -> Response:
    return Response(
        refusal.body(), refusal.status, media_type=JSON, headers={"X-Content-Type-Options": "nosniff"}
    )


async def _relayed(answer: Answer) -> AsyncIterator[bytes]:
    """The answer's chunks; its stream closed when the client goes away. Starlette stops iterating a
    body whose client hung up, and nothing else closes boto3's stream: the emulator (or SageMaker) kept
    the invocation, the container kept computing into it, and its slot stayed taken (the next client
    got a 424 after 60 s). Closed here, synchronously: an await in a cancelled scope is cancelled too."""
    try:
        async for chunk in iterate_in_threadpool(answer.chunks):
            yield chunk
    finally:
        answer.close()


def _respond(answer: Answer) -> Response:
    return StreamingResponse(_relayed(answer), answer.status, media_type=answer.content_type)


def _too_large() -> OpenAIRefusal:
    return OpenAIRefusal(413, f"The body is over {MAX_BODY_BYTES} bytes", "body_too_large")


async def read_body(request: Request) -> bytes:
    """The request's body, at most MAX_BODY_BYTES of it: refused from its `Content-Length`, or as soon as
    the read passes the limit (a chunked body has none), so an oversized upload costs no memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _too_large()
    return bytes(body)


class OpenAIRoutes:
    """The four routes, each a named handler over the endpoints it may call."""

    def __init__(self, endpoints: list[str], sagemaker: SageMakerEndpoints) -> None:
        self.endpoints = endpoints
        self.sagemaker = sagemaker

    async def speech(self, request: Request) -> Response:
        raw = await read_body(request)
        name = endpoint_for(speech_body(raw).get("model"), self.endpoints)
        return _respond(await run_in_threadpool(self.sagemaker.stream, name, raw))

    async def captioned_speech(self, request: Request) -> Response:
        body = speech_body(await read_body(request))
        name = endpoint_for(body.get("model"), self.endpoints)
        return _respond(await run_in_threadpool(self.sagemaker.invoke, name, captioned_request(body)))

    async def voices(self, request: Request) -> Response:
        name = endpoint_for(request.query_params.get("model", OPENAI_MODELS[0]), self.endpoints)
        return _respond(await run_in_threadpool(self.sagemaker.invoke, name, VOICES_REQUEST))

    async def models(self, request: Request) -> Response:
        return JSONResponse(model_list(self.endpoints, "sagemaker"))

    def routes(self) -> list[Route]:
        return [
            Route("/v1/audio/speech", self.speech, methods=["POST"]),
            Route("/dev/captioned_speech", self.captioned_speech, methods=["POST"]),
            Route("/v1/audio/voices", self.voices, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ]


async def _openai_refusal(request: Request, refusal: Exception) -> Response:
    assert isinstance(refusal, OpenAIRefusal)
    return refused(refusal)


async def _no_such_route(request: Request, exc: Exception) -> Response:
    """OpenAI's answer to a URL it does not serve (404), or a method the path does not take (405)."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
        return refused(OpenAIRefusal(405, message, "method_not_allowed"))
    if exc.status_code == 404:
        message = f"Invalid URL ({request.method} {request.url.path})"
        return refused(OpenAIRefusal(404, message, "unknown_url"))
    return refused(OpenAIRefusal(exc.status_code, str(exc.detail), "http_error"))


async def _internal(request: Request, exc: Exception) -> Response:
    logger.exception("unexpected failure serving %s %s", request.method, request.url.path, exc_info=exc)
    return refused(OpenAIRefusal(500, f"internal error: {type(exc).__name__}", "internal_error"))


def _unknown_host(host_header: str) -> Response:
    message = (
        f"The request names the host {host_header[:100]!r}, which is not a name this gateway is reached by "
        "(a page of another site whose name points here); --allowed-host adds names"
    )
    return refused(OpenAIRefusal(400, message, "unknown_host"))


def create_app(
    endpoints: list[str], sagemaker: SageMakerEndpoints, allowed_hosts: tuple[str, ...] | None
) -> Starlette:
    """The gateway over `endpoints`, answering the names `allowed_hosts` (host_guard.allowed_hosts)."""
    return Starlette(
        routes=OpenAIRoutes(endpoints, sagemaker).routes(),
        middleware=[Middleware(HostGuard, allowed=allowed_hosts, refusal=_unknown_host)],
        exception_handlers={
            OpenAIRefusal: _openai_refusal,
            HTTPException: _no_such_route,
            Exception: _internal,
        },
    )
