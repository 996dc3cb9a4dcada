"""Fidelity knobs and SigV4 verification, on one emulator that has them all switched on."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import botocore.exceptions
import pytest

from emulator.echo_container import COMMAND_TYPE
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import (
    bidi_client,
    boto_client,
    endpoint,
    fast_config,
    manifest,
    model,
    next_part,
    open_stream,
    part,
    variant,
)

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients

KEY, SECRET = "AKIDEMULATORTEST", "emulator-test-secret"
LATENCY_S = 0.05


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    config = fast_config(
        tmp_path_factory.mktemp("emulator"),
        sigv4_keys={KEY: SECRET},
        latency_in_ms=LATENCY_S * 1000,
        rechunk=(1, 3),
        rechunk_seed=7,
    )
    resources = [model("echo", "echo:latest"), *endpoint("echo", [variant("AllTraffic", "echo")])]
    with emulator_in_thread(config, manifest(resources)) as running:
        yield running


def test_env_carries_the_configured_key(emu: Emulator) -> None:
    assert (emu.env["AWS_ACCESS_KEY_ID"], emu.env["AWS_SECRET_ACCESS_KEY"]) == (KEY, SECRET)


def test_signed_requests_pass_on_every_service(emu: Emulator) -> None:
    assert (
        boto_client(emu, "sagemaker").describe_endpoint(EndpointName="echo")["EndpointStatus"] == "InService"
    )
    body = (
        boto_client(emu, "sagemaker-runtime")
        .invoke_endpoint(EndpointName="echo", Body=b"signed")["Body"]
        .read()
    )
    assert body == b"signed"


@pytest.mark.parametrize(
    ("key", "secret", "code"),
    [
        (KEY, "wrong-secret", "InvalidSignatureException"),
        ("AKIDUNKNOWN", SECRET, "UnrecognizedClientException"),
    ],
)
def test_bad_signatures_are_refused(emu: Emulator, key: str, secret: str, code: str) -> None:
    for service, call in (("sagemaker", "list_endpoints"), ("sagemaker-runtime", "invoke_endpoint")):
        client = boto_client(emu, service, key=key, secret=secret)
        kwargs = {"EndpointName": "echo", "Body": b"x"} if call == "invoke_endpoint" else {}
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            getattr(client, call)(**kwargs)
        assert caught.value.response["Error"]["Code"] == code
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


async def test_signed_event_stream_is_verified_and_delayed(emu: Emulator) -> None:
    client = await bidi_client(emu, KEY, SECRET)
    stream = await open_stream(client, "echo")
    started = time.monotonic()
    await stream.input_stream.send(part(b"one", "UTF8"))
    _, events = await stream.await_output()
    assert (await next_part(events)).bytes_ == b"one"
    for word in (b"two", b"three"):
        sent = time.monotonic()
        await stream.input_stream.send(part(word, "UTF8"))
        assert (await next_part(events)).bytes_ == word
        assert time.monotonic() - sent >= LATENCY_S
    assert time.monotonic() - started >= 3 * LATENCY_S
    await asyncio.sleep(0.2)
    await stream.close()


async def test_wrong_secret_is_refused_on_the_bidirectional_stream(emu: Emulator) -> None:
    client = await bidi_client(emu, KEY, "wrong-secret")
    stream = await open_stream(client, "echo")
    await stream.input_stream.send(part(b"x"))
    with pytest.raises(Exception, match=r"status: 403 .*InvalidSignatureException"):
        await stream.await_output()


def test_response_stream_is_rechunked_at_arbitrary_boundaries(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    chunks = ['data: {"n": 1}\n\n', 'data: {"n": 2}\n\n']
    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName="echo", Body=json.dumps({"chunks": chunks}).encode(), ContentType=COMMAND_TYPE
    )
    parts = [event["PayloadPart"]["Bytes"] for event in answer["Body"]]
    assert b"".join(parts) == "".join(chunks).encode()
    assert all(1 <= len(p) <= 3 for p in parts)
    assert len(parts) > len(chunks)


def test_invoke_endpoint_gets_the_added_latency(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    runtime.invoke_endpoint(EndpointName="echo", Body=b"warm")
    started = time.monotonic()
    runtime.invoke_endpoint(EndpointName="echo", Body=b"timed")
    assert time.monotonic() - started >= LATENCY_S
