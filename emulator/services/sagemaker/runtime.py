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
from typing import Any

import httpx
from quart import Blueprint, Response, request

from emulator.config import EmulatorConfig
from emulator.controller.routing import Route, Router, RoutingError
from emulator.services.sagemaker.errors import model_error, routing_error
from emulator.wire import eventstream
from emulator.wire.awserrors import AwsError, render_errors, request_id, rest_json_error
from emulator.wire.bodies import body_limit
from emulator.wire.fidelity import Delay, Rechunker, delayed_chunks

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


def runtime_blueprint(config: EmulatorConfig, router: Router, http: httpx.AsyncClient) -> Blueprint:
    bp = Blueprint("sagemaker_runtime", __name__)
    render_errors(bp, rest_json_error)

    async def prepare(name: str) -> tuple[bytes, Route, dict[str, str]]:
        body = await request.get_data()  # within MAX_PAYLOAD (body_limit), refused from its length
        try:
            route = router.route(name, request.headers.get("X-Amzn-SageMaker-Target-Variant"))
        except RoutingError as err:
            raise routing_error(err) from err
        headers = {h: request.headers[h] for h in FORWARDED if h in request.headers}
        if "X-Amzn-SageMaker-Accept" in request.headers:
            headers["Accept"] = request.headers["X-Amzn-SageMaker-Accept"]
        await Delay(config.latency_in_ms, config.jitter_in_ms).hold(time.monotonic())
        return body, route, headers

    def url(route: Route) -> str:
        host, port = route.replica.address or ("127.0.0.1", 0)
        return f"http://{host}:{port}/invocations"

    def unreachable(route: Route, exc: httpx.HTTPError) -> AwsError:
        """No answer from the container (refused, reset, timed out): SageMaker's 424 with status 0."""
        if isinstance(exc, httpx.TimeoutException):
            return model_error(config, route, 0, TIMED_OUT)
        return model_error(config, route, 0, f"could not reach the container: {exc}")

    def response_headers(route: Route, upstream: httpx.Response) -> dict[str, str]:
        headers = {
            "x-Amzn-Invoked-Production-Variant": route.deployed.variant.name,
            "x-amzn-RequestId": request_id(),
        }
        if "X-Amzn-SageMaker-Custom-Attributes" in upstream.headers:
            headers["X-Amzn-SageMaker-Custom-Attributes"] = upstream.headers[
                "X-Amzn-SageMaker-Custom-Attributes"
            ]
        return headers

    @bp.post("/endpoints/<name>/invocations")
    @body_limit(MAX_PAYLOAD, payload_too_large)
    async def invoke(name: str) -> Response:
        body, route, headers = await prepare(name)  # an AwsError is answered by render_errors
        lease = route.lease()
        try:
            upstream = await http.post(
                url(route), content=body, headers=headers, timeout=config.invoke_timeout_s
            )
        except httpx.HTTPError as exc:
            raise unreachable(route, exc) from exc
        finally:
            lease.release()
        if not 200 <= upstream.status_code < 300:
            raise model_error(config, route, upstream.status_code, upstream.text)
        await Delay(config.latency_out_ms, config.jitter_out_ms).hold(time.monotonic())
        out_headers = response_headers(route, upstream)
        return Response(
            upstream.content,
            status=200,
            content_type=upstream.headers.get("Content-Type", "application/octet-stream"),
            headers=out_headers,
        )

    @bp.post("/endpoints/<name>/invocations-response-stream")
    @body_limit(MAX_PAYLOAD, payload_too_large)
    async def invoke_stream(name: str) -> Response:
        body, route, headers = await prepare(name)  # an AwsError is answered by render_errors
        lease = route.lease()
        try:
            upstream = await http.send(
                http.build_request(
                    "POST", url(route), content=body, headers=headers, timeout=config.invoke_timeout_s
                ),
                stream=True,
            )
            if not 200 <= upstream.status_code < 300:
                text = (await upstream.aread()).decode(errors="replace")
                await upstream.aclose()
                raise model_error(config, route, upstream.status_code, text)
        except AwsError:
            lease.release()
            raise
        except httpx.HTTPError as exc:
            lease.release()
            raise unreachable(route, exc) from exc

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
                await upstream.aclose()
                lease.release()

        out_headers = response_headers(route, upstream)
        out_headers["X-Amzn-SageMaker-Content-Type"] = upstream.headers.get(
            "Content-Type", "application/octet-stream"
        )
        return Response(
            events(), status=200, content_type="application/vnd.amazon.eventstream", headers=out_headers
        )

    return bp


def _stream_error(code: str, message: str) -> bytes:
    payload: dict[str, Any] = {"Message": message, "ErrorCode": code}
    return eventstream.exception("ModelStreamError", json.dumps(payload).encode())
