"""InvokeEndpoint and InvokeEndpointWithResponseStream through the emulator, with boto3."""

from __future__ import annotations

import json
from collections.abc import Iterator

import botocore.exceptions
import pytest

from emulator.echo_container import COMMAND_TYPE
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import boto_client, endpoint, fast_config, manifest, model, variant

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [model("echo", "echo:latest"), *endpoint("echo", [variant("AllTraffic", "echo")])]
    with emulator_in_thread(fast_config(tmp_path_factory.mktemp("emulator")), manifest(resources)) as running:
        yield running


def command(**fields: object) -> dict[str, object]:
    return {"Body": json.dumps(fields).encode(), "ContentType": COMMAND_TYPE}


def test_invoke_endpoint_returns_the_container_answer(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    answer = runtime.invoke_endpoint(
        EndpointName="echo",
        Body=b'{"text": "hi"}',
        ContentType="application/json",
        CustomAttributes="trace=1",
    )
    assert answer["Body"].read() == b'{"text": "hi"}'
    assert answer["ContentType"] == "application/json"
    assert answer["InvokedProductionVariant"] == "AllTraffic"
    assert answer["CustomAttributes"] == "trace=1"
    assert answer["ResponseMetadata"]["RequestId"]


def test_container_error_is_model_error_424(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    with pytest.raises(runtime.exceptions.ModelError) as caught:
        runtime.invoke_endpoint(EndpointName="echo", **command(status=400, body="bad input"))
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert response["OriginalStatusCode"] == 400
    assert response["OriginalMessage"] == "bad input"
    assert response["LogStreamArn"].startswith("arn:aws:logs:")
    assert 'Received client error (400) from primary with message "bad input"' in response["Error"]["Message"]


def test_unknown_endpoint_is_validation_error(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    with pytest.raises(
        runtime.exceptions.ValidationError, match="Endpoint nope of account 123456789012 not found"
    ):
        runtime.invoke_endpoint(EndpointName="nope", Body=b"x")


def test_response_stream_is_split_at_arbitrary_boundaries_by_default(emu: Emulator) -> None:
    """As on AWS, a PayloadPart is not a container write: every write arrives cut into pieces."""
    runtime = boto_client(emu, "sagemaker-runtime")
    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName="echo", **command(chunks=["data: one\n\n", "data: two\n\n"], delay_ms=20)
    )
    assert answer["ContentType"] == "text/plain"
    assert answer["InvokedProductionVariant"] == "AllTraffic"
    parts = [event["PayloadPart"]["Bytes"] for event in answer["Body"]]
    assert b"".join(parts) == b"data: one\n\ndata: two\n\n"
    assert len(parts) >= 4, "each of the two writes is cut at least once"
    assert b"data: one\n\n" not in parts and b"data: two\n\n" not in parts


def test_broken_stream_is_model_stream_error(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    answer = runtime.invoke_endpoint_with_response_stream(
        EndpointName="echo", **command(chunks=["a", "b", "c"], break_after=2, delay_ms=20)
    )
    parts = []
    with pytest.raises(botocore.exceptions.EventStreamError) as caught:
        for event in answer["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])
    assert parts == [b"a", b"b"]
    assert caught.value.response["Error"]["Code"] == "ModelStreamError"
    assert "connection to the model container broke" in caught.value.response["Error"]["Message"]


def test_response_stream_container_error_is_model_error(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    with pytest.raises(runtime.exceptions.ModelError) as caught:
        runtime.invoke_endpoint_with_response_stream(EndpointName="echo", **command(status=503, body="busy"))
    assert caught.value.response["OriginalStatusCode"] == 503
