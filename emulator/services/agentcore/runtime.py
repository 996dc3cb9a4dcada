"""Bedrock AgentCore Runtime's data plane: InvokeAgentRuntime (restJson1).

Data plane (`bedrock-agentcore`): `POST /runtimes/<URL-encoded runtime ARN>/invocations?qualifier=Q`
forwards the payload to the runtime replica's `POST /invocations` (AgentCore's container contract:
port 8080 in a container, `GET /ping`, the session-id header) and passes the answer through as it
arrives, `text/event-stream` included. The session id (`X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`,
33 to 256 characters) is generated when absent and returned in the response header.

Errors as the service models them (body `{"message": ...}`, code in `x-amzn-ErrorType`):
`ValidationException` 400 (bad session id, malformed ARN, a bare runtime id without `accountId`),
`AccessDeniedException` 403 (another account's runtime), `ResourceNotFoundException` 404 (unknown
runtime or qualifier, a runtime whose creation failed), `RetryableConflictException` 409 (the runtime
is still CREATING), `RuntimeClientError` 424 (the container answered non-2xx, is not answering, or
could not be reached). A container that breaks off mid-answer breaks off the client's response too
(the HTTP/1.1 chunked body ends without its last chunk), which botocore raises as
`ResponseStreamingError`. The fidelity latency knobs delay the request and every response chunk.

InvokeAgentRuntimeWithWebSocketStream: `GET /runtimes/<URL-encoded runtime ARN>/ws?qualifier=Q` upgraded
to a WebSocket (signed in its headers or presigned in its query, emulator.wire.auth) opens the replica's
`/ws` (the same contract: the session id header, the custom headers) and relays every message both
ways, TEXT as TEXT and BINARY as BINARY, until either side closes; the close code is passed on. What
would refuse an invocation refuses the upgrade with the same HTTP error, before it is accepted; the
session id may also come as the query parameter of that name (what a presigned URL carries).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence

import httpx
import websockets
from quart import Response, request, websocket

from emulator.config import EmulatorConfig
from emulator.controller.forward import post_invocation
from emulator.controller.routing import Lease
from emulator.controller.store import AgentRuntime, Replica
from emulator.services.agentcore.control import AgentCoreControl
from emulator.services.agentcore.errors import (
    access_denied,
    agentcore_error,
    field_error,
    not_found,
    runtime_client_error,
)
from emulator.services.agentcore.shapes import DEFAULT_ENDPOINT
from emulator.wire.awserrors import AwsError, request_id
from emulator.wire.bodies import body_limit
from emulator.wire.fidelity import Delay, delayed_chunks
from emulator.wire.views import Handler

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
MAX_PAYLOAD = 100_000_000
"""InvokeAgentRuntime's payload: botocore's model caps it at 100,000,000 bytes."""
FORWARDED = (
    "Content-Type",
    "Accept",
    SESSION_HEADER,
    "X-Amzn-Bedrock-AgentCore-Runtime-User-Id",
    "X-Amzn-Trace-Id",
    "traceparent",
    "tracestate",
    "baggage",
    "Mcp-Session-Id",
    "Mcp-Protocol-Version",
)
CUSTOM_HEADER_PREFIX = "x-amzn-bedrock-agentcore-runtime-custom-"
REQUEST_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Request-Id"
INVOCATION_TIMEOUT = httpx.Timeout(900.0, connect=10.0)
WS_CONNECT_TIMEOUT_S = 10.0
"""AgentCore lets a request run 15 minutes, however long the agent stays silent in between."""


class StreamBroken(Exception):
    """Raised out of a response body to abort it, as the container aborted its own."""


class Invocation:
    """Where one InvokeAgentRuntime goes: the runtime, its replica, the session id."""

    def __init__(self, runtime: AgentRuntime, replica: Replica, session_id: str) -> None:
        self.runtime = runtime
        self.replica = replica
        self.session_id = session_id


def resolve(
    control: AgentCoreControl,
    target: str,
    qualifier: str | None,
    session_id: str | None,
    account_id: str | None = None,
) -> Invocation:
    """The runtime named by an ARN (or by its id with `accountId`, as the service requires), the
    qualifier, and a checked session id. Another account's runtime is refused as AWS refuses a caller
    without a grant on it (AccessDeniedException), by ARN or by id; this emulator is one account."""
    if session_id is not None and not 33 <= len(session_id) <= 256:
        raise field_error(
            "runtimeSessionId",
            f"Value at 'runtimeSessionId' failed to satisfy constraint: Member must have length "
            f"between 33 and 256 (got {len(session_id)})",
        )
    runtime_id = target
    if target.startswith("arn:"):
        parts = target.split(":", 5)
        if len(parts) != 6 or parts[2] != "bedrock-agentcore" or not parts[5].startswith("runtime/"):
            raise field_error(
                "agentRuntimeArn",
                f"{target} is not an agent runtime ARN (arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/ID)",
            )
        if parts[4] != control.account_id:
            raise access_denied(control.account_id, target)
        if parts[3] != control.region:
            raise not_found(f"No agent runtime {target} in account {control.account_id} in {control.region}")
        runtime_id = parts[5].removeprefix("runtime/")
    elif account_id is None:
        raise field_error("accountId", "accountId is required when the agent runtime is named by its id")
    elif account_id != control.account_id:
        arn = f"arn:aws:bedrock-agentcore:{control.region}:{account_id}:runtime/{target}"
        raise access_denied(control.account_id, arn)
    runtime = control.store.agent_runtimes.get(runtime_id)
    if runtime is None or runtime.status == "DELETING":
        raise not_found(f"No agent runtime found for {target}")
    name = qualifier or DEFAULT_ENDPOINT
    if name not in runtime.endpoints:
        raise not_found(f"No endpoint {name} on agent runtime {runtime.id}")
    replica = runtime.current
    if replica is None:
        if runtime.status == "CREATING":
            raise AwsError(
                "RetryableConflictException",
                f"Agent runtime {runtime.id} is still CREATING; retry once it is READY",
                409,
            )
        raise not_found(
            f"Agent runtime {runtime.id} has no READY version ({runtime.status}: {runtime.failure_reason})"
        )
    if not replica.ready or replica.address is None:
        raise runtime_client_error(
            f"The agent runtime's container is not answering GET /ping (phase {replica.phase}, "
            f"{replica.restarts} restart(s)); see {replica.log_path}"
        )
    return Invocation(runtime, replica, session_id or f"emulator-{uuid.uuid4()}")


def payload_too_large(limit: int) -> AwsError:
    return field_error("payload", f"Member must have length less than or equal to {limit}")


def _forwarded(
    headers: Mapping[str, str], call: Invocation, names: Sequence[str] = FORWARDED
) -> dict[str, str]:
    """The client's headers AgentCore passes to the container, its custom ones, and the session's ids."""
    forwarded = {h: headers[h] for h in names if h in headers}
    forwarded |= {k: v for k, v in headers.items() if k.lower().startswith(CUSTOM_HEADER_PREFIX)}
    return forwarded | {SESSION_HEADER: call.session_id, REQUEST_ID_HEADER: request_id()}


async def _open_invocation(
    http: httpx.AsyncClient, call: Invocation, body: bytes, headers: dict[str, str]
) -> httpx.Response:
    """The container's answer, opened as a stream; its refusal (non-2xx) is AgentCore's 424."""
    upstream = await post_invocation(http, call.replica, body, headers, INVOCATION_TIMEOUT)
    if not 200 <= upstream.status_code < 300:
        text = (await upstream.aread()).decode(errors="replace")
        await upstream.aclose()
        raise runtime_client_error(
            f"Received error ({upstream.status_code}) from runtime. Check your CloudWatch logs "
            f"for more information. Response: {text[:1000]} (emulator log: {call.replica.log_path})"
        )
    return upstream


async def _passthrough(
    config: EmulatorConfig,
    control: AgentCoreControl,
    call: Invocation,
    upstream: httpx.Response,
    lease: Lease,
) -> AsyncIterator[bytes]:
    """The container's answer as it arrives; one that breaks off breaks the client's response off too."""
    try:
        async for chunk in delayed_chunks(
            upstream.aiter_raw(), Delay(config.latency_out_ms, config.jitter_out_ms)
        ):
            yield chunk
    except httpx.HTTPError as exc:
        reason = f"the agent runtime's container broke off its answer: {type(exc).__name__} {exc}"
        control.store.events.add("Warning", "StreamBroken", call.replica.id, reason)
        raise StreamBroken(reason) from None  # the client's response breaks off too
    finally:
        await upstream.aclose()
        lease.release()


async def _open_socket(call: Invocation, headers: dict[str, str]) -> websockets.ClientConnection:
    """The replica's `/ws`, with the headers AgentCore passes on."""
    assert call.replica.address is not None  # resolve() answers only a ready replica
    host, port = call.replica.address
    return await websockets.connect(
        f"ws://{host}:{port}/ws",
        additional_headers=headers,
        open_timeout=WS_CONNECT_TIMEOUT_S,
        max_size=None,
        proxy=None,
    )


def runtime_handlers(
    config: EmulatorConfig, control: AgentCoreControl, http: httpx.AsyncClient
) -> dict[str, Handler]:
    """InvokeAgentRuntime and its WebSocket stream (served by routes.py)."""

    @body_limit(MAX_PAYLOAD, payload_too_large)
    async def invoke(target: str) -> Response:
        body = await request.get_data()  # within MAX_PAYLOAD, refused from its length when it says so
        try:
            qualifier = request.args.get("qualifier")
            call = resolve(
                control, target, qualifier, request.headers.get(SESSION_HEADER), request.args.get("accountId")
            )
        except AwsError as err:
            return agentcore_error(err)
        headers = _forwarded(request.headers, call)
        await Delay(config.latency_in_ms, config.jitter_in_ms).hold(time.monotonic())
        lease = Lease(call.replica)
        try:
            upstream = await _open_invocation(http, call, body, headers)
        except (httpx.HTTPError, AwsError) as exc:
            lease.release()
            if isinstance(exc, httpx.HTTPError):
                exc = runtime_client_error(f"could not reach the agent runtime's container: {exc}")
            return agentcore_error(exc)
        return Response(
            _passthrough(config, control, call, upstream, lease),
            status=upstream.status_code,
            content_type=upstream.headers.get("Content-Type", "application/octet-stream"),
            headers={SESSION_HEADER: call.session_id, "x-amzn-RequestId": headers[REQUEST_ID_HEADER]},
        )

    async def converse(target: str) -> Response | None:
        args, client_headers = websocket.args, websocket.headers
        try:
            session = client_headers.get(SESSION_HEADER) or args.get(SESSION_HEADER)
            call = resolve(control, target, args.get("qualifier"), session, args.get("accountId"))
        except AwsError as err:
            return agentcore_error(err)
        headers = _forwarded(client_headers, call, [h for h in FORWARDED if h != "Content-Type"])
        lease = Lease(call.replica)
        try:
            upstream = await _open_socket(call, headers)
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            lease.release()
            return agentcore_error(runtime_client_error(f"could not open the agent runtime's /ws: {exc}"))
        try:
            await websocket.accept(headers={SESSION_HEADER: call.session_id})
            await _relay(upstream)
        finally:
            await upstream.close()
            lease.release()
        return None

    return {"InvokeAgentRuntime": invoke, "InvokeAgentRuntimeWithWebSocketStream": converse}


async def _relay(upstream: websockets.ClientConnection) -> None:
    """Every message both ways until a side closes; the container's close code reaches the client."""

    async def down() -> None:
        while True:
            await upstream.send(await websocket.receive())

    async def up() -> None:
        async for message in upstream:
            await websocket.send(message)

    tasks = [asyncio.create_task(down()), asyncio.create_task(up())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    # 1005 (no code given) and 1006 (no close frame) are never sent: a plain close, or an error.
    code = {None: 1000, 1005: 1000, 1006: 1011}.get(upstream.close_code, upstream.close_code)
    with contextlib.suppress(Exception):
        await websocket.close(code, upstream.close_reason or "")
