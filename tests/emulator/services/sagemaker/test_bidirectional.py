"""InvokeEndpointWithBidirectionalStream through the emulator, with the official HTTP/2 client.

The containers are real servers: the frame-reporting echo container (emulator.echo_container) and a
Starlette container that only reads text (tests/fixtures/text_only_container.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import Iterator

import httpx
import pytest
from aws_sdk_sagemaker_runtime_http2.models import InputValidationError, ModelError, ModelStreamError

from emulator.server import Emulator, emulator_in_thread
from emulator.wire import eventstream
from tests.emulator.support import (
    TEXT_ONLY_COMMAND,
    bidi_client,
    endpoint,
    fast_config,
    manifest,
    model,
    next_part,
    open_stream,
    part,
    replicas,
    variant,
)

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [
        model("echo", "echo:latest"),
        *endpoint(
            "echo",
            [
                variant(
                    "A", "echo", count=2, RoutingConfig={"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
                ),
                variant("B", "echo", weight=0.0),
            ],
        ),
        model("unlabelled", "plain-echo:1"),
        *endpoint("unlabelled", [variant("AllTraffic", "unlabelled")]),
        model("text-only", "text-only:latest"),
        *endpoint("text-only", [variant("AllTraffic", "text-only")]),
    ]
    images = {
        "plain-echo": {
            "command": ["{python}", "-m", "emulator.echo_container", "--port", "{port}"],
            "bidirectional": False,
        },
        "text-only": {"command": TEXT_ONLY_COMMAND},
    }
    config = fast_config(tmp_path_factory.mktemp("emulator"))
    with emulator_in_thread(config, manifest(resources, images)) as running:
        yield running


async def _report(events) -> dict:
    got = await next_part(events)
    assert got is not None and got.data_type == "UTF8"
    return json.loads(got.bytes_)


async def test_text_and_binary_frames_arrive_as_declared(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="report")
    await stream.input_stream.send(part(b'{"text": "hi"}', "UTF8"))
    await stream.input_stream.send(part(b"\x00\xffbinary", "BINARY"))
    await stream.input_stream.send(part(b"no data type"))
    _, events = await stream.await_output()
    reports = [await _report(events) for _ in range(3)]
    assert [(r["opcode"], r["fin"]) for r in reports] == [("text", True), ("binary", True), ("binary", True)]
    assert reports[0]["data"] == '{"text": "hi"}'
    assert base64.b64decode(reports[1]["data_b64"]) == b"\x00\xffbinary"
    await stream.close()


async def test_fragmented_client_message_becomes_continuation_frames(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="report")
    for data, state in ((b"Hello ", "PARTIAL"), (b"big ", "PARTIAL"), (b"World", "COMPLETE")):
        await stream.input_stream.send(part(data, "UTF8", state))
    await stream.input_stream.send(part(b"\x01", "BINARY", "PARTIAL"))
    await stream.input_stream.send(part(b"\x02", "BINARY", "COMPLETE"))
    _, events = await stream.await_output()
    reports = [await _report(events) for _ in range(5)]
    assert [(r["opcode"], r["fin"]) for r in reports] == [
        ("text", False),
        ("continuation", False),
        ("continuation", True),
        ("binary", False),
        ("continuation", True),
    ]
    assert "".join(r["data"] for r in reports[:3]) == "Hello big World"
    await stream.close()


async def test_fragmented_container_message_becomes_partial_parts(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="report")
    frames = [
        {"kind": "binary", "data": "ab", "fin": False},
        {"kind": "continuation", "data": "cd", "fin": False},
        {"kind": "continuation", "data": "ef", "fin": True},
        {"kind": "text", "data": "whole", "fin": True},
    ]
    await stream.input_stream.send(part(json.dumps({"cmd": "send", "frames": frames}).encode(), "UTF8"))
    _, events = await stream.await_output()
    got = [await next_part(events) for _ in range(4)]
    assert [(p.data_type, p.completion_state, p.bytes_) for p in got] == [
        ("BINARY", "PARTIAL", b"ab"),
        ("BINARY", "PARTIAL", b"cd"),
        ("BINARY", "COMPLETE", b"ef"),
        ("UTF8", "COMPLETE", b"whole"),
    ]
    await stream.close()


async def test_container_close_becomes_model_stream_error(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="report")
    await stream.input_stream.send(
        part(b'{"cmd": "close", "code": 1011, "reason": "model fell over"}', "UTF8")
    )
    _, events = await stream.await_output()
    with pytest.raises(ModelStreamError) as caught:
        await next_part(events)
    assert caught.value.error_code == "1011"
    assert caught.value.message == "model fell over"
    await stream.close()


async def test_container_normal_close_ends_the_stream(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="report")
    await stream.input_stream.send(part(b'{"cmd": "close", "code": 1000}', "UTF8"))
    _, events = await stream.await_output()
    assert await next_part(events) is None
    await stream.close()


async def test_end_of_input_closes_the_container_websocket(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo")
    await stream.input_stream.send(part(b"last words", "UTF8"))
    _, events = await stream.await_output()
    echoed = await next_part(events)
    assert (echoed.data_type, echoed.bytes_) == ("UTF8", b"last words")
    await stream.input_stream.close()
    assert await next_part(events) is None
    for _ in range(50):
        if all(r["sessions"] == 0 for r in replicas(emu, "echo")):
            break
        await asyncio.sleep(0.05)
    assert all(r["sessions"] == 0 for r in replicas(emu, "echo"))


async def raw_h2(emu: Emulator, messages: list[bytes], pause_s: float = 0.3) -> list[eventstream.Message]:
    """POST unsigned events over h2 and end with END_STREAM only (no empty envelope), like client 0.1.0."""

    async def body():
        for message in messages:
            yield message
        await asyncio.sleep(pause_s)

    tls = ssl.create_default_context(cafile=str(emu.tls.ca))
    async with httpx.AsyncClient(http2=True, verify=tls, trust_env=False) as client:
        response = await client.post(
            f"{emu.h2_url}/endpoints/echo/invocations-bidirectional-stream",
            content=body(),
            headers={"content-type": "application/vnd.amazon.eventstream"},
        )
    assert (response.http_version, response.status_code) == ("HTTP/2", 200)
    return eventstream.Decoder().feed(response.content)


def payload_part(data: bytes, **headers: str) -> bytes:
    return eventstream.event("PayloadPart", data, content_type="application/octet-stream", **headers)


async def test_end_stream_without_empty_envelope(emu: Emulator) -> None:
    messages = await raw_h2(emu, [payload_part(b"unsigned", DataType="UTF8")])
    assert [(m.event_type, m.headers["DataType"], m.payload) for m in messages] == [
        ("PayloadPart", "UTF8", b"unsigned")
    ]


async def test_bad_data_type_ends_the_stream_with_internal_stream_failure(emu: Emulator) -> None:
    [message] = await raw_h2(emu, [payload_part(b"x", DataType="TEXT")], pause_s=0)
    assert message.exception_type == "InternalStreamFailure"
    assert "DataType must be UTF8 or BINARY" in json.loads(message.payload)["Message"]


async def test_path_and_query_string_reach_the_container(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(
        client, "echo", model_invocation_path="report", model_query_string="model=nova-3&x=1"
    )
    await stream.input_stream.send(part(b"q", "UTF8"))
    _, events = await stream.await_output()
    report = await _report(events)
    assert (report["path"], report["query"]) == ("/report", "model=nova-3&x=1")
    await stream.close()


async def test_target_variant_routing(emu: Emulator) -> None:
    client = await bidi_client(emu)
    b_pids = {r["pid"] for r in replicas(emu, "echo") if r["variant"] == "B"}
    stream = await open_stream(client, "echo", model_invocation_path="report", target_variant="B")
    await stream.input_stream.send(part(b"which", "UTF8"))
    output, events = await stream.await_output()
    assert output.invoked_production_variant == "B"
    assert (await _report(events))["pid"] in b_pids
    await stream.close()


async def test_sessions_spread_across_replicas(emu: Emulator) -> None:
    client = await bidi_client(emu)
    a_pids = {r["pid"] for r in replicas(emu, "echo") if r["variant"] == "A"}
    streams = [await open_stream(client, "echo", model_invocation_path="report") for _ in range(2)]
    seen = set()
    for stream in streams:
        await stream.input_stream.send(part(b"who", "UTF8"))
        output, events = await stream.await_output()
        assert output.invoked_production_variant == "A"
        seen.add((await _report(events))["pid"])
    assert seen == a_pids and len(seen) == 2
    for stream in streams:
        await stream.close()


async def test_unknown_endpoint_is_input_validation_error(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "no-such-endpoint")
    await stream.input_stream.send(part(b"x"))
    with pytest.raises(InputValidationError, match="no-such-endpoint"):
        await stream.await_output()


async def test_rejected_handshake_is_model_error(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "echo", model_invocation_path="no/such/path")
    await stream.input_stream.send(part(b"x"))
    with pytest.raises(ModelError) as caught:
        await stream.await_output()
    assert caught.value.original_status_code == 404


async def test_image_without_bidi_label_is_rejected(emu: Emulator) -> None:
    client = await bidi_client(emu)
    stream = await open_stream(client, "unlabelled")
    await stream.input_stream.send(part(b"x"))
    with pytest.raises(InputValidationError, match="bidirectional-streaming"):
        await stream.await_output()


async def test_text_only_container_fails_on_binary_parts(emu: Emulator) -> None:
    """Like the AWS sample read with receive_text(): BINARY parts (the default) break the session."""
    client = await bidi_client(emu)
    stream = await open_stream(client, "text-only")
    await stream.input_stream.send(part(b"hello", "UTF8"))
    _, events = await stream.await_output()
    answer = await next_part(events)
    assert (answer.data_type, answer.bytes_) == ("UTF8", b"HELLO")
    await stream.input_stream.send(part(b"hello as binary"))
    with pytest.raises(ModelStreamError) as caught:
        await next_part(events)
    # uvicorn drops the connection (1006); other servers send Close 1011: both are the close code.
    assert caught.value.error_code in {"1006", "1011"}
    await stream.close()
