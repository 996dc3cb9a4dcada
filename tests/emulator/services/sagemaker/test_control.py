"""The SageMaker control plane and the controller, driven by boto3 like a deployment script would."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import botocore.exceptions
import pytest

from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import (
    FIXTURES,
    bidi_client,
    boto_client,
    fast_config,
    manifest,
    next_part,
    open_stream,
    part,
    process_gone,
    replicas,
    status,
)

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients

FAST_WAIT = {"Delay": 0.1, "MaxAttempts": 300}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    images = {
        "crashing": {"command": ["{python}", "-c", "import sys; print('cannot load model'); sys.exit(3)"]},
        "stubborn": {"command": ["{python}", str(FIXTURES / "stubborn_container.py"), "--port", "{port}"]},
    }
    with emulator_in_thread(
        fast_config(tmp_path_factory.mktemp("emulator")), manifest([], images)
    ) as running:
        yield running


@pytest.fixture(scope="module")
def sagemaker(emu: Emulator):
    return boto_client(emu, "sagemaker")


def create(
    sagemaker,
    name: str,
    image: str = "echo:latest",
    count: int = 1,
    environment: dict | None = None,
    **variant_fields: object,
) -> None:
    container = {"Image": image, "Environment": environment or {}}
    sagemaker.create_model(
        ModelName=name, PrimaryContainer=container, ExecutionRoleArn="arn:aws:iam::123456789012:role/x"
    )
    sagemaker.create_endpoint_config(
        EndpointConfigName=name,
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": name,
                "InstanceType": "ml.g5.xlarge",
                "InitialInstanceCount": count,
                **variant_fields,
            }
        ],
    )
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=name)


def wait_until(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_create_endpoint_goes_from_creating_to_in_service(emu: Emulator, sagemaker) -> None:
    create(sagemaker, "slow-start", environment={"ECHO_STARTUP_DELAY_S": "1"})
    assert sagemaker.describe_endpoint(EndpointName="slow-start")["EndpointStatus"] == "Creating"
    sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="slow-start", WaiterConfig=FAST_WAIT)
    described = sagemaker.describe_endpoint(EndpointName="slow-start")
    assert described["EndpointStatus"] == "InService"
    assert described["EndpointConfigName"] == "slow-start"
    [summary] = described["ProductionVariants"]
    assert (summary["VariantName"], summary["CurrentInstanceCount"]) == ("AllTraffic", 1)
    listed = {e["EndpointName"]: e["EndpointStatus"] for e in sagemaker.list_endpoints()["Endpoints"]}
    assert listed["slow-start"] == "InService"


def test_model_environment_and_data_reach_the_container(emu: Emulator, sagemaker, tmp_path: Path) -> None:
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"weights"
        info = tarfile.TarInfo("voices/af.bin")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    sagemaker.create_model(
        ModelName="with-data",
        PrimaryContainer={
            "Image": "echo:latest",
            "Environment": {"TTS_VOICE": "jm_kumo"},
            "ModelDataUrl": archive.as_uri(),
        },
    )
    sagemaker.create_endpoint_config(
        EndpointConfigName="with-data",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "with-data",
                "InstanceType": "ml.g5.xlarge",
                "InitialInstanceCount": 1,
            }
        ],
    )
    sagemaker.create_endpoint(EndpointName="with-data", EndpointConfigName="with-data")
    sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="with-data", WaiterConfig=FAST_WAIT)

    async def ask() -> dict:
        client = await bidi_client(emu)
        stream = await open_stream(client, "with-data", model_invocation_path="report")
        await stream.input_stream.send(
            part(b'{"cmd": "env", "names": ["TTS_VOICE", "TTS_MODEL_DIR"]}', "UTF8")
        )
        _, events = await stream.await_output()
        answer = await next_part(events)
        await stream.close()
        return json.loads(answer.bytes_)

    answer = asyncio.run(ask())
    assert answer["env"]["TTS_VOICE"] == "jm_kumo"
    assert answer["env"]["TTS_MODEL_DIR"]
    assert "voices/af.bin" in answer["model_files"]


def test_unhealthy_container_fails_the_endpoint(tmp_path: Path) -> None:
    # SageMaker (and the emulator, as botocore's model says) refuses a variant's startup timeout under
    # 60 s, so the 1 s this test waits is the emulator's default for variants that name none.
    with emulator_in_thread(fast_config(tmp_path, startup_timeout_s=1.0), manifest([])) as quick:
        sagemaker = boto_client(quick, "sagemaker")
        create(sagemaker, "never-healthy", environment={"ECHO_PING_STATUS": "503"})
        with pytest.raises(botocore.exceptions.WaiterError):
            sagemaker.get_waiter("endpoint_in_service").wait(
                EndpointName="never-healthy", WaiterConfig=FAST_WAIT
            )
        described = sagemaker.describe_endpoint(EndpointName="never-healthy")
        assert described["EndpointStatus"] == "Failed"
        assert "did not pass the ping health check" in described["FailureReason"]
        assert not [r for r in replicas(quick, "never-healthy") if r["phase"] == "Running"]


def test_crashing_container_fails_fast_with_its_log(emu: Emulator, sagemaker) -> None:
    create(sagemaker, "crashing", image="crashing:1")
    with pytest.raises(botocore.exceptions.WaiterError):
        sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="crashing", WaiterConfig=FAST_WAIT)
    reason = sagemaker.describe_endpoint(EndpointName="crashing")["FailureReason"]
    assert "exited with status 3" in reason
    assert "cannot load model" in reason


def test_killed_replica_is_restarted(emu: Emulator, sagemaker) -> None:
    [before] = replicas(emu, "slow-start")
    os.kill(before["pid"], signal.SIGKILL)
    after = wait_until(
        lambda: next((r for r in replicas(emu, "slow-start") if r["restarts"] == 1 and r["ready"]), None)
    )
    assert after["pid"] != before["pid"]
    assert after["id"] == before["id"]
    assert sagemaker.describe_endpoint(EndpointName="slow-start")["EndpointStatus"] == "InService"
    reasons = [(e["reason"], e["object"]) for e in status(emu)["events"]]
    assert ("ReplicaExited", before["id"]) in reasons
    assert ("Restarting", before["id"]) in reasons


def test_update_endpoint_replaces_replicas_then_switches(emu: Emulator, sagemaker) -> None:
    old_pids = [r["pid"] for r in replicas(emu, "slow-start")]
    sagemaker.create_endpoint_config(
        EndpointConfigName="slow-start-v2",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "slow-start",
                "InstanceType": "ml.g5.2xlarge",
                "InitialInstanceCount": 2,
            }
        ],
    )
    sagemaker.update_endpoint(EndpointName="slow-start", EndpointConfigName="slow-start-v2")
    described = sagemaker.describe_endpoint(EndpointName="slow-start")
    assert described["EndpointStatus"] == "Updating"
    assert described["EndpointConfigName"] == "slow-start"
    runtime = boto_client(emu, "sagemaker-runtime")
    assert (
        runtime.invoke_endpoint(EndpointName="slow-start", Body=b"during update")["Body"].read()
        == b"during update"
    )
    sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="slow-start", WaiterConfig=FAST_WAIT)
    assert sagemaker.describe_endpoint(EndpointName="slow-start")["EndpointConfigName"] == "slow-start-v2"
    new = replicas(emu, "slow-start")
    assert len(new) == 2 and all(r["ready"] for r in new)
    assert not {r["pid"] for r in new} & set(old_pids)
    wait_until(lambda: all(process_gone(pid) for pid in old_pids))


def test_delete_endpoint_leaves_no_process_behind(emu: Emulator, sagemaker) -> None:
    pids = [r["pid"] for r in replicas(emu, "slow-start")]
    assert pids and not any(process_gone(pid) for pid in pids)
    sagemaker.delete_endpoint(EndpointName="slow-start")
    sagemaker.get_waiter("endpoint_deleted").wait(EndpointName="slow-start", WaiterConfig=FAST_WAIT)
    assert all(process_gone(pid) for pid in pids)
    with pytest.raises(sagemaker.exceptions.ClientError, match="Could not find endpoint"):
        sagemaker.describe_endpoint(EndpointName="slow-start")


def test_delete_kills_a_replica_that_ignores_sigterm_after_the_grace(emu: Emulator, sagemaker) -> None:
    create(sagemaker, "stubborn", image="stubborn:1")
    sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="stubborn", WaiterConfig=FAST_WAIT)
    [replica] = replicas(emu, "stubborn")
    started = time.monotonic()
    sagemaker.delete_endpoint(EndpointName="stubborn")
    assert sagemaker.describe_endpoint(EndpointName="stubborn")["EndpointStatus"] == "Deleting"
    sagemaker.get_waiter("endpoint_deleted").wait(EndpointName="stubborn", WaiterConfig=FAST_WAIT)
    assert time.monotonic() - started >= emu.config.stop_grace_s
    assert process_gone(replica["pid"])


def test_bad_requests_are_validation_exceptions(emu: Emulator, sagemaker) -> None:
    def code_of(call, **kwargs) -> tuple[str, str]:
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            call(**kwargs)
        return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]

    code, message = code_of(
        sagemaker.create_model, ModelName="mystery", PrimaryContainer={"Image": "mystery:1"}
    )
    assert code == "ValidationException" and "no local command for image" in message
    code, message = code_of(
        sagemaker.create_model,
        ModelName="s3-data",
        PrimaryContainer={"Image": "echo:1", "ModelDataUrl": "s3://bucket/model.tar.gz"},
    )
    assert code == "ValidationException" and "cannot reach s3://" in message
    code, message = code_of(sagemaker.create_endpoint, EndpointName="orphan", EndpointConfigName="missing")
    assert code == "ValidationException" and "Could not find endpoint configuration" in message
    code, message = code_of(
        sagemaker.create_model, ModelName="crashing", PrimaryContainer={"Image": "echo:1"}
    )
    assert code == "ValidationException" and "already existing model" in message
    code, message = code_of(sagemaker.update_endpoint, EndpointName="crashing", EndpointConfigName="crashing")
    assert code == "ValidationException" and "failed endpoint" in message
    assert sagemaker.describe_model(ModelName="crashing")["PrimaryContainer"]["Image"] == "crashing:1"
    sagemaker.delete_model(ModelName="crashing")
    code, _ = code_of(sagemaker.describe_model, ModelName="crashing")
    assert code == "ValidationException"
