"""SageMaker Runtime over HTTP/1.1: InvokeEndpoint and InvokeEndpointWithResponseStream.

Requests are forwarded to the chosen replica's `POST /invocations` with the headers SageMaker passes
on; answers and errors come back the way botocore parses them (sagemaker-runtime.md §2.1-2.2): a
container non-2xx is a 424 ModelError, an unknown endpoint a 400 ValidationError, a stream that
breaks half-way a ModelStreamError event.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from quart import Response, request

from emulator.config import EmulatorConfig
from emulator.controller.forward import post_invocation
from emulator.controller.routing import Lease, Route, Router, RoutingError
from emulator.services.sagemaker.errors import model_error, routing_error
from emulator.wire import eventstream
from emulator.wire.awserrors import AwsError, request_id
from emulator.wire.bodies import body_limit
from emulator.wire.fidelity import Delay, Rechunker, delayed_chunks
from emulator.wire.views import Handler

MAX_PAYLOAD = 6 * 1024 * 1024
"""InvokeEndpoint's Body: botocore's model caps it at 6,291,456 bytes, for both operations."""
FORWARDED = (
    "Content-Type",
    "Accept",
    "X-Amzn-SageMaker-Custom-Attributes",
    "X-Amzn-SageMaker-Target-Model",
    "X-Amzn-SageMaker-Inference-Id",
    "X-Amzn-SageMaker-Session-Id",
    "X-Amzn-SageMaker-Enable-Explanations",
)
TIMED_OUT = (
    "Your invocation timed out while waiting for a response from container primary. Review the latency "
    "metrics for each container in Amazon CloudWatch, resolve the issue, and try again."
)


def payload_too_large(limit: int) -> AwsError:
    return AwsError("ValidationError", f"Request payload is larger than {limit} bytes.")


@dataclass
class Invocation:
    """One request forwarded to a replica's `POST /invocations`: its answer is open (streamed) until
    `close`, which also ends the replica's lease."""

    route: Route
    upstream: httpx.Response
    lease: Lease

    async def close(self) -> None:
        try:
            await self.upstream.aclose()
        finally:
            self.lease.release()


async def open_invocation(
    config: EmulatorConfig,
    router: Router,
    http: httpx.AsyncClient,
    name: str,
    body: bytes,
    headers: dict[str, str],
    variant: str | None = None,
) -> Invocation:
    """The path every invocation of an endpoint takes (InvokeEndpoint and its response stream): the
    payload limit, a replica of the endpoint, the fidelity's inbound delay, the replica's answer opened
    as a stream. A routing failure is SageMaker's error; no answer from the container is the 424 with
    status 0."""
    if len(body) > MAX_PAYLOAD:
        raise payload_too_large(MAX_PAYLOAD)
    try:
        route = router.route(name, variant)
    except RoutingError as err:
        raise routing_error(err) from err
    await Delay(config.latency_in_ms, config.jitter_in_ms).hold(time.monotonic())
    lease = route.lease()
    try:
        upstream = await post_invocation(http, route.replica, body, headers, config.invoke_timeout_s)
    except httpx.HTTPError as exc:
        lease.release()
        if isinstance(exc, httpx.TimeoutException):
            raise model_error(config, route, 0, TIMED_OUT) from exc
        raise model_error(config, route, 0, f"could not reach the container: {exc}") from exc
    return Invocation(route, upstream, lease)


async def _forward(config: EmulatorConfig, router: Router, http: httpx.AsyncClient, name: str) -> Invocation:
    """The request's body and SageMaker's headers to a replica; a container's refusal is the 424."""
    body = await request.get_data()  # within MAX_PAYLOAD (body_limit), refused from its length
    headers = {h: request.headers[h] for h in FORWARDED if h in request.headers}
    if "X-Amzn-SageMaker-Accept" in request.headers:
        headers["Accept"] = request.headers["X-Amzn-SageMaker-Accept"]
    variant = request.headers.get("X-Amzn-SageMaker-Target-Variant")
    invocation = await open_invocation(config, router, http, name, body, headers, variant)
    upstream = invocation.upstream
    if not 200 <= upstream.status_code < 300:
        text = (await upstream.aread()).decode(errors="replace")
        await invocation.close()
        raise model_error(config, invocation.route, upstream.status_code, text)
    return invocation


def _response_headers(route: Route, upstream: httpx.Response) -> dict[str, str]:
    headers = {
        "x-Amzn-Invoked-Production-Variant": route.deployed.variant.name,
        "x-amzn-RequestId": request_id(),
    }
    if "X-Amzn-SageMaker-Custom-Attributes" in upstream.headers:
        headers["X-Amzn-SageMaker-Custom-Attributes"] = upstream.headers["X-Amzn-SageMaker-Custom-Attributes"]
    return headers


def runtime_handlers(config: EmulatorConfig, router: Router, http: httpx.AsyncClient) -> dict[str, Handler]:
    """InvokeEndpoint and InvokeEndpointWithResponseStream, by operation (served by routes.py)."""

    @body_limit(MAX_PAYLOAD, payload_too_large)
    async def invoke(name: str) -> Response:
        invocation = await _forward(config, router, http, name)  # an AwsError is answered by render_errors
        try:
            content = await invocation.upstream.aread()
        except httpx.HTTPError as exc:
            raise model_error(config, invocation.route, 0, f"could not reach the container: {exc}") from exc
        finally:
            await invocation.close()
        upstream = invocation.upstream
        await Delay(config.latency_out_ms, config.jitter_out_ms).hold(time.monotonic())
        return Response(
            content,
            status=200,
            content_type=upstream.headers.get("Content-Type", "application/octet-stream"),
            headers=_response_headers(invocation.route, upstream),
        )

    @body_limit(MAX_PAYLOAD, payload_too_large)
    async def invoke_stream(name: str) -> Response:
        invocation = await _forward(config, router, http, name)  # an AwsError is answered by render_errors
        upstream, route = invocation.upstream, invocation.route
        rechunker = Rechunker(config.rechunk, config.rechunk_seed)
        delay = Delay(config.latency_out_ms, config.jitter_out_ms)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for chunk in delayed_chunks(upstream.aiter_raw(), delay):
                    for part in rechunker.split(chunk):
                        yield eventstream.event("PayloadPart", part, content_type="application/octet-stream")
            except httpx.TimeoutException:
                yield _stream_error("ModelInvocationTimeExceeded", TIMED_OUT)
            except httpx.HTTPError as exc:
                yield _stream_error("StreamBroken", f"the connection to the model container broke: {exc}")
            finally:
                await invocation.close()

        out_headers = _response_headers(route, upstream)
        out_headers["X-Amzn-SageMaker-Content-Type"] = upstream.headers.get(
            "Content-Type", "application/octet-stream"
        )
        return Response(
            events(), status=200, content_type="application/vnd.amazon.eventstream", headers=out_headers
        )

    return {"InvokeEndpoint": invoke, "InvokeEndpointWithResponseStream": invoke_stream}


def _stream_error(code: str, message: str) -> bytes:
    payload: dict[str, Any] = {"Message": message, "ErrorCode": code}
    return eventstream.exception("ModelStreamError", json.dumps(payload).encode())
