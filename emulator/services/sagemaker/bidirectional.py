"""InvokeEndpointWithBidirectionalStream: the router + sidecar between an HTTP/2 event stream and the
container's WebSocket (sagemaker-runtime.md §1.6, §2.4, §7.4).

Per session: validate the request, pick a replica, open `ws://replica/<path>[?query]`, then answer
200 with the event-stream headers and pump both directions:

- client -> container: each signed envelope is unwrapped and its PayloadPart becomes exactly one
  WebSocket frame (UTF8 -> text, BINARY/absent -> binary; PARTIAL...COMPLETE -> a fragmented message
  of data + continuation frames). An empty envelope or END_STREAM is the end of input: Close 1000
  to the container, keep relaying its frames until it closes or a grace period ends.
- container -> client: each frame becomes one PayloadPart with DataType and CompletionState; a
  container Close other than 1000 becomes a ModelStreamError event (ErrorCode = close code,
  Message = reason; a connection dropped without a Close counts as code 1006, RFC 6455 §7.1.5);
  then END_STREAM.

The WebSocket opens before the 200 goes out, so a rejected handshake can still be a 424 ModelError;
on loopback that costs about a millisecond, and client events sent meanwhile wait in the body buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from quart import Response, request, stream_with_context
from quart.wrappers import Body

from emulator.config import EmulatorConfig
from emulator.controller.routing import Route, Router, RoutingError
from emulator.controller.runtimes import Runtime, RuntimeUnavailable
from emulator.services.sagemaker.errors import input_error, model_error
from emulator.services.sagemaker.shapes import NAME_RE
from emulator.wire import auth, eventstream
from emulator.wire.awserrors import AwsError, request_id, rest_json_error
from emulator.wire.bodies import body_limit
from emulator.wire.fidelity import Delay
from emulator.wire.sigv4 import EventChain, Signed
from emulator.wire.views import Handler
from emulator.wire.wsframes import FrameKind, FrameSocket, HandshakeRejected, WsFrame

DEFAULT_PATH = "invocations-bidirectional-stream"
PATH_RE = re.compile(r"^[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*$")
QUERY_RE = re.compile(
    r"^[a-zA-Z0-9][A-Za-z0-9_-]*=[A-Za-z0-9\-._~%]*(&[a-zA-Z0-9][A-Za-z0-9_-]*=[A-Za-z0-9\-._~%]*)*$"
)
_CLOSING: set[asyncio.Task[None]] = set()
"""WebSockets still closing after their session ended (kept referenced until done)."""


BUFFERED_INPUT = 2 * (eventstream.MAX_PAYLOAD_LENGTH + eventstream.MAX_HEADERS_LENGTH)
"""What the client may have sent that the session has not yet taken (two of the largest events the
codec admits): the input is read as it arrives, so this bounds memory, not the stream's length."""


def unread_input_overflow(limit: int) -> Exception:
    return eventstream.EventStreamError(
        f"the client sent more than {limit} bytes that the container has not taken yet"
    )


class StreamFailure(Exception):
    """Ends a running session with an exception event (the HTTP status is already 200)."""

    def __init__(self, exception_type: str, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        payload = {"Message": message}
        if error_code is not None:
            payload["ErrorCode"] = error_code
        self.event = eventstream.exception(exception_type, json.dumps(payload).encode())


@dataclass(frozen=True)
class Target:
    variant: str | None
    resource: str


def parse_target(name: str, headers) -> Target:
    """Check the request's inputs as the service model constrains them."""
    if not NAME_RE.match(name):
        raise input_error(f"EndpointName {name!r} must match {NAME_RE.pattern} (at most 63 characters).")
    variant = headers.get("X-Amzn-SageMaker-Target-Variant") or None
    path = headers.get("X-Amzn-SageMaker-Model-Invocation-Path") or None
    query = headers.get("X-Amzn-SageMaker-Model-Query-String") or None
    if variant is not None and not NAME_RE.match(variant):
        raise input_error(f"TargetVariant {variant!r} must match {NAME_RE.pattern}.")
    if path is not None and (
        len(path) > 100 or not PATH_RE.match(path) or {".", ".."} & set(path.split("/"))
    ):
        raise input_error(
            f"ModelInvocationPath {path!r} must match {PATH_RE.pattern} (at most 100 characters) "
            "and must not contain '.' or '..' segments."
        )
    if query is not None and (len(query) > 2048 or not QUERY_RE.match(query)):
        raise input_error("ModelQueryString must be key=value pairs joined by & (at most 2048 characters).")
    resource = "/" + (path or DEFAULT_PATH) + (f"?{query}" if query else "")
    return Target(variant, resource)


class Session:
    """One bidirectional stream bridged to one container WebSocket."""

    def __init__(self, config: EmulatorConfig, route: Route, ws: FrameSocket, signed: Signed | None) -> None:
        self.config = config
        self.route = route
        self.lease = route.lease()
        self.ws = ws
        self.chain = EventChain(signed) if signed is not None else None
        self.failure: StreamFailure | None = None
        self.input_ended = False
        self.input_ended_by_client = False
        self._request_done = asyncio.Event()
        self._in_fragment = False
        self._out_kind: FrameKind = "binary"
        self._in_delay = Delay(config.latency_in_ms, config.jitter_in_ms)
        self._out_delay = Delay(config.latency_out_ms, config.jitter_out_ms)
        self._sender: asyncio.Task[None] | None = None

    async def run(self, body: Body) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._pump_in(body)), loop.create_task(self._watchdog())]
        try:
            while (frame := await self.ws.recv()) is not None:
                await self._out_delay.hold(frame.at)
                yield self._payload_part(frame)
            final = self._final_event()
            if final is not None:
                yield final
            if self.input_ended:
                # The client ended its input: let its END_STREAM arrive before ours, or the CRT
                # client fails writing it to a completed stream.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await self._request_done.wait()
        finally:
            for task in [*tasks, self._sender]:
                if task is not None:
                    task.cancel()
            self.lease.release()
            closing = loop.create_task(self._close_quietly())
            _CLOSING.add(closing)
            closing.add_done_callback(_CLOSING.discard)

    def _fail(self, failure: StreamFailure) -> None:
        if self.failure is None:
            self.failure = failure
        self.ws.abort()

    def _final_event(self) -> bytes | None:
        if self.failure is not None:
            return self.failure.event
        code = self.ws.close_code
        if self.ws.close_sent_first and code in {None, 1000, 1005, 1006}:
            return None  # we closed (end of input): the container's normal answer, or none, is no error
        if code == 1000 and not self.config.close_1000_is_error:
            return None
        reason = self.ws.close_reason
        if code is None or code == 1006:  # the connection ended without a Close (RFC 6455 §7.1.5)
            code = 1006
            reason = "the model container dropped the connection without a WebSocket Close"
        return StreamFailure("ModelStreamError", reason, str(code)).event

    def _payload_part(self, frame: WsFrame) -> bytes:
        if frame.kind != "continuation":
            self._out_kind = frame.kind
        headers = {"DataType": "UTF8" if self._out_kind == "text" else "BINARY"}
        if not frame.fin:
            headers["CompletionState"] = "PARTIAL"
        elif frame.kind == "continuation":
            headers["CompletionState"] = "COMPLETE"
        elif self.config.unfragmented_completion_state:
            headers["CompletionState"] = self.config.unfragmented_completion_state
        return eventstream.event(
            "PayloadPart", frame.data, content_type="application/octet-stream", **headers
        )

    # client -> container -------------------------------------------------------------------------

    async def _pump_in(self, body: Body) -> None:
        """Read the request body; a sender task applies the in-direction latency and writes frames."""
        queue: asyncio.Queue[tuple[float, eventstream.Message | None]] = asyncio.Queue(maxsize=256)
        sender = self._sender = asyncio.get_running_loop().create_task(self._send_frames(queue))
        decoder = eventstream.Decoder()
        try:
            async for chunk in body:
                if self.input_ended_by_client:
                    continue
                for message in decoder.feed(chunk):
                    part = self._unwrap(message)
                    await queue.put((time.monotonic(), part))
                    if part is None:
                        self.input_ended_by_client = True
                        break
            self._request_done.set()
            if decoder.pending and not self.input_ended_by_client:
                raise eventstream.EventStreamError(
                    f"the input ended inside an event ({decoder.pending} bytes of an incomplete message)"
                )
            if not self.input_ended_by_client:
                await queue.put((time.monotonic(), None))
            await sender
        except eventstream.EventStreamError as exc:
            self._fail(
                StreamFailure("InternalStreamFailure", f"malformed event stream from the client: {exc}")
            )
        except StreamFailure as failure:
            self._fail(failure)
        finally:
            if self.failure is not None:
                sender.cancel()

    def _unwrap(self, message: eventstream.Message) -> eventstream.Message | None:
        """The inner PayloadPart of a signed envelope; None for the end-of-input envelope.

        With SigV4 on, every event must be a signed envelope whose signature continues the chain;
        an unsigned event ends the session like a wrong signature does."""
        if self.chain is not None and ":chunk-signature" not in message.headers:
            raise StreamFailure(
                "InternalStreamFailure", "event is not signed (no :chunk-signature) but SigV4 is required"
            )
        if ":chunk-signature" in message.headers:
            if self.chain is not None and not self.chain.verify(message):
                raise StreamFailure("InternalStreamFailure", "event signature does not match")
            if not message.payload:
                return None
            message = eventstream.decode(message.payload)
        if message.message_type != "event" or message.event_type != "PayloadPart":
            raise StreamFailure(
                "InternalStreamFailure",
                "expected a PayloadPart event, got "
                f"{message.message_type}/{message.event_type or message.exception_type}",
            )
        return message

    async def _send_frames(self, queue: asyncio.Queue[tuple[float, eventstream.Message | None]]) -> None:
        try:
            while True:
                arrived, part = await queue.get()
                await self._in_delay.hold(arrived)
                if part is None:
                    await self._end_of_input()
                    return
                await self._send_part(part)
        except StreamFailure as failure:
            self._fail(failure)
        except (ConnectionError, OSError):
            self.ws.abort()

    async def _send_part(self, part: eventstream.Message) -> None:
        data_type = part.headers.get("DataType")
        state = part.headers.get("CompletionState")
        if data_type not in {None, "UTF8", "BINARY"}:
            raise StreamFailure(
                "InternalStreamFailure", f"DataType must be UTF8 or BINARY, got {data_type!r}"
            )
        if state not in {None, "PARTIAL", "COMPLETE"}:
            raise StreamFailure(
                "InternalStreamFailure", f"CompletionState must be PARTIAL or COMPLETE, got {state!r}"
            )
        if not self.ws.open:
            return
        fin = state != "PARTIAL"
        kind: FrameKind = "text" if data_type == "UTF8" else "binary"
        await self.ws.send("continuation" if self._in_fragment else kind, part.payload, fin)
        self._in_fragment = not fin

    async def _end_of_input(self) -> None:
        self.input_ended = True
        await self.ws.close(1000)
        await self.ws.wait_closed(self.config.end_of_input_grace_s)

    # liveness ---------------------------------------------------------------------------------

    async def _watchdog(self) -> None:
        """Ping the container every interval; end the session after missed pongs or the time cap."""
        deadline = time.monotonic() + self.config.max_session_s
        while True:
            wait = min(self.config.ws_ping_interval_s, deadline - time.monotonic())
            await asyncio.sleep(max(0.0, wait))
            if time.monotonic() >= deadline:
                self._fail(
                    StreamFailure(
                        "ModelStreamError",
                        f"the session reached the maximum duration of {self.config.max_session_s:g} s",
                        "ModelInvocationTimeExceeded",
                    )
                )
                return
            if self.ws.unanswered_pings >= self.config.ws_ping_misses:
                self._fail(
                    StreamFailure(
                        "ModelStreamError",
                        f"the model container did not answer {self.ws.unanswered_pings} pings",
                        "StreamBroken",
                    )
                )
                return
            with contextlib.suppress(ConnectionError, OSError):
                await self.ws.ping()

    async def _close_quietly(self) -> None:
        """After the response ended (or the client went away): close the WebSocket if still open."""
        with contextlib.suppress(ConnectionError, OSError):
            await self.ws.close(1000 if self.input_ended else 1001)
        await self.ws.wait_closed(self.config.end_of_input_grace_s)


async def open_session(config: EmulatorConfig, router: Router, runtime: Runtime, name: str) -> Session:
    """A replica of the endpoint the request names, checked as SageMaker checks it (a variant, the
    image's bidirectional label), and its container's WebSocket open: the session's two ends."""
    signed = auth.signature()
    target = parse_target(name, request.headers)
    try:
        route = router.route(name, target.variant)
    except RoutingError as err:
        if err.kind == "no_replica":
            raise AwsError(
                "ServiceUnavailableError", err.message, 503, ErrorCode="ServiceUnavailable"
            ) from err
        raise input_error(err.message) from err
    try:
        labelled = await runtime.is_bidirectional(route.deployed.model.image)
    except RuntimeUnavailable as exc:
        raise input_error(str(exc)) from exc
    if not labelled:
        raise input_error(
            f"Endpoint {name} does not support bidirectional streaming: "
            f"image {route.deployed.model.image} "
            "lacks the label com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true."
        )
    host, port = route.replica.address or ("127.0.0.1", 0)
    try:
        ws = await FrameSocket.connect(host, port, target.resource, limit_s=config.ws_connect_timeout_s)
    except HandshakeRejected as exc:
        err = model_error(config, route, exc.status, bytes(exc.body).decode(errors="replace"))
        err.members["ErrorCode"] = "ModelError"
        raise err from exc
    except (OSError, TimeoutError) as exc:
        err = model_error(config, route, 0, f"could not open a WebSocket to the container: {exc!r}")
        err.members["ErrorCode"] = "ModelError"
        raise err from exc
    return Session(config, route, ws, signed)


def bidirectional_handlers(config: EmulatorConfig, router: Router, runtime: Runtime) -> dict[str, Handler]:
    """InvokeEndpointWithBidirectionalStream (served by routes.py)."""

    @auth.event_stream_input
    @body_limit(BUFFERED_INPUT, unread_input_overflow)
    async def bidirectional(name: str) -> Response:
        try:
            session = await open_session(config, router, runtime, name)
        except AwsError as err:
            return rest_json_error(err)
        body = request.body

        @stream_with_context
        async def events() -> AsyncIterator[bytes]:
            async with contextlib.aclosing(session.run(body)) as stream:
                async for chunk in stream:
                    yield chunk

        return Response(
            events(),
            status=200,
            content_type="application/vnd.amazon.eventstream",
            headers={
                "x-amzn-requestid": request_id(),
                "x-amzn-invoked-production-variant": session.route.deployed.variant.name,
            },
        )

    return {"InvokeEndpointWithBidirectionalStream": bidirectional}
