"""The bad-input battery through the emulator, as tables of input -> outcome.

Raw HTTP/2 and HTTP/1.1 bytes and the official clients. Every case must end in a typed error (an
HTTP error with `x-amzn-ErrorType`, or an exception event on a stream that started), never a 500, a
hang or a dropped connection, and the emulator must serve the next request as before.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator

import pytest
from aws_sdk_sagemaker_runtime_http2.models import InputValidationError

from emulator.server import Emulator
from emulator.wire import eventstream
from tests.emulator.support import (
    bidi_client,
    boto_client,
    open_stream,
    part,
)
from tests.reliability.emulator_support import (
    BEDROCK_MODEL_ID,
    BIDI_PATH,
    converse_body,
    echo_emulator,
    open_echoing,
    payload_part,
    post,
    say,
)

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(60)]

EVENTSTREAM = {"content-type": "application/vnd.amazon.eventstream"}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    home = tmp_path_factory.mktemp("emulator")
    with echo_emulator(home, llm_first_token_ms=0, llm_tokens_per_s=2000.0) as running:
        yield running


async def still_serves(emu: Emulator) -> None:
    """The emulator and the container answer good requests after the bad one."""
    answer = await post(emu, "/endpoints/echo/invocations", b"still here", {"content-type": "text/plain"})
    assert (answer.status, answer.body) == (200, b"still here")
    stream, _ = await open_echoing(emu)
    await stream.close()


GOOD = payload_part(b"first", DataType="UTF8")
BAD_PRELUDE_CRC = GOOD[:8] + struct.pack(">I", 0) + GOOD[12:]
BAD_MESSAGE_CRC = GOOD[:-4] + struct.pack(">I", 0)
HUGE_HEADERS = struct.pack(">II", 16 + 200_000, 200_000)
HUGE_HEADERS += struct.pack(">I", __import__("zlib").crc32(HUGE_HEADERS))

# input events (raw HTTP/2, then END_STREAM) -> the events that must come back
STREAM_CASES = {
    "a truncated trailing event": ([GOOD[:20]], [], "ended inside an event"),
    "a good event, then a truncated one": ([GOOD, GOOD[:-1]], [b"first"], "ended inside an event"),
    "only a prelude": ([GOOD[:12]], [], "ended inside an event"),
    "a bad prelude CRC": ([BAD_PRELUDE_CRC], [], "prelude CRC"),
    "a bad message CRC": ([BAD_MESSAGE_CRC], [], "message CRC"),
    "a 200 kB header block": ([HUGE_HEADERS], [], "size limits"),
    "an exception event instead of a PayloadPart": (
        [eventstream.exception("ModelStreamError", b"{}")],
        [],
        "expected a PayloadPart",
    ),
    "DataType TEXT": ([payload_part(b"x", DataType="TEXT")], [], "DataType must be"),
    "CompletionState WHOLE": ([payload_part(b"x", CompletionState="WHOLE")], [], "CompletionState must be"),
    "an envelope whose payload is not a message": (
        [eventstream.encode({":chunk-signature": b"\0" * 32}, b"not an event")],
        [],
        "malformed",
    ),
}


@pytest.mark.parametrize("case", list(STREAM_CASES))
@pytest.mark.parametrize("http2", [True, False], ids=["h2", "http1.1"])
async def test_malformed_event_streams_end_with_a_typed_event(emu: Emulator, case: str, http2: bool) -> None:
    events, echoed, message = STREAM_CASES[case]
    answer = await post(emu, BIDI_PATH.format(name="echo"), events, EVENTSTREAM, http2=http2, linger_s=0.3)
    say(f"bidi {'h2' if http2 else 'http/1.1'}: {case}", answer.describe())
    assert answer.status == 200
    payloads = [e.payload for e in answer.events if e.event_type == "PayloadPart"]
    assert set(payloads) <= set(echoed), "only the well-formed events reach the container"
    assert answer.events[-1].exception_type == "InternalStreamFailure"
    assert message in json.loads(answer.events[-1].payload)["Message"]
    await still_serves(emu)


TRAVERSALS = [
    "../../ping",
    "../ping",
    "a/../../ping",
    "./ping",
    "..",
    "report/..",
    "/ping",
    "%2e%2e/ping",
    "..%2fping",
]


@pytest.mark.parametrize("path", TRAVERSALS)
async def test_invocation_path_traversal_is_a_validation_error(emu: Emulator, path: str) -> None:
    headers = {**EVENTSTREAM, "x-amzn-sagemaker-model-invocation-path": path}
    answer = await post(emu, BIDI_PATH.format(name="echo"), [GOOD], headers, http2=True)
    say(f"bidi invocation path {path!r}", answer.describe())
    assert (answer.status, answer.error_type) == (400, "InputValidationError")
    assert json.loads(answer.body)["ErrorCode"] == "InputValidationError"
    await still_serves(emu)


async def test_invocation_path_traversal_through_the_official_client(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="../../ping")
    await stream.input_stream.send(part(b"x"))
    with pytest.raises(InputValidationError, match=r"must not contain '\.' or '\.\.' segments"):
        await stream.await_output()
    say("official HTTP/2 client, invocation path '../../ping'", "InputValidationError")


# request -> (status, error type), sent raw
REQUEST_CASES = {
    "InvokeEndpoint, unknown endpoint": ("/endpoints/nope/invocations", {}, b"x", 400, "ValidationError"),
    "InvokeEndpoint, 6 MiB + 1 byte": (
        "/endpoints/echo/invocations",
        {},
        b"x" * (6 * 1024 * 1024 + 1),
        400,
        "ValidationError",
    ),
    "InvokeEndpoint, unknown variant": (
        "/endpoints/echo/invocations",
        {"X-Amzn-SageMaker-Target-Variant": "Nope"},
        b"x",
        400,
        "ValidationError",
    ),
    "response stream, unknown endpoint": (
        "/endpoints/nope/invocations-response-stream",
        {},
        b"x",
        400,
        "ValidationError",
    ),
    "bidi, unknown endpoint": (
        "/endpoints/nope/invocations-bidirectional-stream",
        EVENTSTREAM,
        GOOD,
        400,
        "InputValidationError",
    ),
    "bidi, bad endpoint name": (
        "/endpoints/-bad-/invocations-bidirectional-stream",
        EVENTSTREAM,
        GOOD,
        400,
        "InputValidationError",
    ),
    "bidi, bad query string": (
        BIDI_PATH.format(name="echo"),
        {**EVENTSTREAM, "X-Amzn-SageMaker-Model-Query-String": "a=b&&c"},
        GOOD,
        400,
        "InputValidationError",
    ),
    "control plane, unknown operation": (
        "/",
        {"X-Amz-Target": "SageMaker.DropTables"},
        b"{}",
        400,
        "UnknownOperationException",
    ),
    "control plane, body not JSON": (
        "/",
        {"X-Amz-Target": "SageMaker.ListEndpoints"},
        b"{",
        400,
        "SerializationException",
    ),
    "control plane, body a JSON list": (
        "/",
        {"X-Amz-Target": "SageMaker.ListEndpoints"},
        b"[]",
        400,
        "SerializationException",
    ),
    "control plane, missing name": (
        "/",
        {"X-Amz-Target": "SageMaker.DescribeEndpoint"},
        b"{}",
        400,
        "ValidationException",
    ),
    "Converse, body not JSON": (f"/model/{BEDROCK_MODEL_ID}/converse", {}, b"{", 400, "ValidationException"),
    "Converse, 100 000-deep JSON": (
        f"/model/{BEDROCK_MODEL_ID}/converse",
        {},
        b"[" * 100_000 + b"]" * 100_000,
        400,
        "ValidationException",
    ),
    "Converse, 5 000-digit integer": (
        f"/model/{BEDROCK_MODEL_ID}/converse",
        {},
        b'{"messages": [], "inferenceConfig": {"maxTokens": ' + b"9" * 5000 + b"}}",
        400,
        "ValidationException",
    ),
    "Converse, lone surrogate": (
        f"/model/{BEDROCK_MODEL_ID}/converse",
        {},
        b'{"messages": [{"role": "user", "content": [{"text": "\\ud800"}]}], '
        b'"inferenceConfig": {"maxTokens": 0}}',
        400,
        "ValidationException",
    ),
    "ConverseStream, no messages": (
        f"/model/{BEDROCK_MODEL_ID}/converse-stream",
        {},
        b'{"messages": []}',
        400,
        "ValidationException",
    ),
    "ConverseStream, invalid UTF-8": (
        f"/model/{BEDROCK_MODEL_ID}/converse-stream",
        {},
        b"\xff\xfe",
        400,
        "ValidationException",
    ),
}


@pytest.mark.parametrize("case", list(REQUEST_CASES))
async def test_bad_requests_get_typed_errors(emu: Emulator, case: str) -> None:
    path, headers, body, status, code = REQUEST_CASES[case]
    # The bidirectional stream is an HTTP/2 operation; the others are HTTP/1.1 (restJson1, awsJson1.1).
    answer = await post(emu, path, body, headers, http2=path.endswith("-bidirectional-stream"))
    say(case, answer.describe())
    assert (answer.status, answer.error_type) == (status, code)
    document = json.loads(answer.body)
    assert document.get("Message") or document.get("message")
    await still_serves(emu)


def test_bedrock_still_answers_after_the_battery(emu: Emulator) -> None:
    client = boto_client(emu, "bedrock-runtime")
    answer = client.converse(modelId=BEDROCK_MODEL_ID, messages=json.loads(converse_body())["messages"])
    assert answer["output"]["message"]["content"][0]["text"]
