"""One bidirectional stream to a SageMaker endpoint through the official HTTP/2 client: the one way the
agent opens, writes, reads and closes a stream, whichever container is behind it (Kokoro's TTS,
`agent.tts_session`; Whisper's STT, `agent.stt_session`).

What comes back is one kind of chunk, reassembled from its PARTIAL pieces and split by one rule
(`classify`): a chunk that is a whole JSON object is a control message, anything else is audio.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Self

from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.models import (
    InternalStreamFailure,
    InvokeEndpointWithBidirectionalStreamInput,
    ModelStreamError,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponseStreamEventPayloadPart,
)

OPEN_TIMEOUT_S = 15.0
_CRT_WRITER = "_set_request_body_generator"

log = logging.getLogger("agent.endpoint_stream")


@dataclass(frozen=True)
class Audio:
    data: bytes


@dataclass(frozen=True)
class Control:
    message: dict[str, Any]

    @property
    def type(self) -> str | None:
        kind = self.message.get("type")
        return kind if isinstance(kind, str) else None


def classify(chunk: bytes) -> Audio | Control:
    """A chunk is a control frame only if the WHOLE chunk parses as a JSON object; anything else is
    audio. Raw PCM can start with 0x7b ('{'), so looking at the first byte is not enough."""
    if chunk.lstrip()[:1] == b"{":
        try:
            message = json.loads(chunk)
        except (ValueError, RecursionError):  # not UTF-8/JSON, a huge integer, deep nesting
            return Audio(chunk)
        if isinstance(message, dict):
            return Control(message)
    return Audio(chunk)


def _drop_crt_writer_race(loop: asyncio.AbstractEventLoop) -> None:
    """awscrt's HTTP/2 request writer sometimes ends its stream after the response has completed, and
    leaves the error in a task nobody awaits: "Task exception was never retrieved" (or "unhandled
    exception during asyncio.run() shutdown") "... AWS_ERROR_HTTP_STREAM_HAS_COMPLETED" on a normal
    close (awslabs/aws-crt-python#762, open). The session had already ended, so nothing is lost. This
    drops exactly that error from `loop`'s exception handler (one debug line) and passes everything
    else to the handler before it."""
    previous = loop.get_exception_handler()
    if getattr(previous, _CRT_WRITER, False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error, task = context.get("exception"), context.get("future") or context.get("task")
        coroutine = task.get_coro() if isinstance(task, asyncio.Task) else None
        if (
            isinstance(error, RuntimeError)
            and "AWS_ERROR_HTTP_STREAM_HAS_COMPLETED" in str(error)
            and getattr(coroutine, "__qualname__", "").endswith(_CRT_WRITER)
        ):
            log.debug("awscrt's request writer ended after its stream (aws-crt-python#762)")
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    setattr(handler, _CRT_WRITER, True)
    loop.set_exception_handler(handler)


class EndpointStreamError(RuntimeError):
    """The endpoint ended the stream with an error event (e.g. the container closed abnormally), or
    the stream could not be opened."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code


# SageMaker's EndpointName pattern (botocore's sagemaker service model).
ENDPOINT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


class EndpointStream:
    """One `InvokeEndpointWithBidirectionalStream`: open it with `await Kind.open(client, endpoint)`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._input_closed = False

    @classmethod
    async def open(
        cls, client: AsyncSageMakerRuntimeHTTP2Client, endpoint_name: str, timeout_s: float = OPEN_TIMEOUT_S
    ) -> Self:
        """Start the stream. Bounded in time: when signing or connecting fails inside the official
        client's background task, its call never returns on its own. An endpoint name SageMaker would
        refuse is refused here at once: the official client fails to build the request's path for an
        empty one inside that task, and its call would wait out the timeout."""
        if not ENDPOINT_NAME.fullmatch(endpoint_name):
            raise EndpointStreamError(
                "ValidationError",
                f"endpoint name {endpoint_name!r} is not a SageMaker endpoint name "
                f"(1-63 letters, digits and hyphens: {ENDPOINT_NAME.pattern})",
            )
        _drop_crt_writer_race(asyncio.get_running_loop())
        try:
            async with asyncio.timeout(timeout_s):
                stream = await client.invoke_endpoint_with_bidirectional_stream(
                    InvokeEndpointWithBidirectionalStreamInput(endpoint_name=endpoint_name)
                )
        except TimeoutError:
            raise EndpointStreamError(
                "SessionOpenTimeout",
                f"could not open a session to endpoint {endpoint_name} within {timeout_s:g} s",
            ) from None
        return cls(stream)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def send(self, message: dict[str, Any]) -> None:
        """One control message, as a UTF8 part (the container gets a TEXT frame)."""
        payload = json.dumps(message, separators=(",", ":")).encode()
        await self._stream.input_stream.send(
            RequestStreamEventPayloadPart(value=RequestPayloadPart(bytes_=payload, data_type="UTF8"))
        )

    async def send_bytes(self, data: bytes) -> None:
        """Binary data (audio), as a BINARY part."""
        await self._stream.input_stream.send(
            RequestStreamEventPayloadPart(value=RequestPayloadPart(bytes_=data, data_type="BINARY"))
        )

    async def chunks(self) -> AsyncIterator[Audio | Control]:
        """Every chunk the container sends, in order, reassembled when it arrives in fragments,
        until the container ends the stream."""
        _, output = await self._stream.await_output()
        fragments: list[bytes] = []
        try:
            async for event in output:
                if not isinstance(event, ResponseStreamEventPayloadPart):
                    continue
                part = event.value
                fragments.append(part.bytes_ or b"")
                if part.completion_state == "PARTIAL":
                    continue
                chunk, fragments = b"".join(fragments), []
                yield classify(chunk)
        except ModelStreamError as exc:
            raise EndpointStreamError(exc.error_code, exc.message) from exc
        except InternalStreamFailure as exc:
            raise EndpointStreamError("InternalStreamFailure", exc.message) from exc
        await self._close_input()

    async def _close_input(self) -> None:
        if not self._input_closed:
            self._input_closed = True
            await self._stream.input_stream.close()

    async def _before_close(self) -> None:
        """What a kind of stream says in-band before its input ends (nothing by default)."""

    async def aclose(self) -> None:
        """Close the stream: `_before_close`, then the input, then the stream.

        Closing may raise CancelledError: a reader of `chunks()` cancelled before the endpoint had
        answered cancels the official client's output future, and its `close()` awaits that future.
        The caller must not let that end its own response."""
        # The stream may already be broken; closing must not mask the error that brought us here.
        with contextlib.suppress(Exception):
            await self._before_close()
            await self._close_input()
        await self._stream.close()
