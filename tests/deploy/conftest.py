"""Fixtures for the deploy tests: moto's real server on loopback standing in for AWS, and an
environment stripped of every AWS setting of the machine (no profile, no instance metadata)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from moto.server import ThreadedMotoServer

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.prereqs import BOOTSTRAP_VERSION_PARAMETER
from facts import DEFAULT_VOICE

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's account


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing of this machine's AWS setup leaks in, and botocore never probes instance metadata."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "DEPLOY_", "AGENT_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(moto_url: str, no_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Aws:
    """Clients on a freshly reset moto, with the dummy credentials moto accepts."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    httpx.post(f"{moto_url}/moto-api/reset").raise_for_status()
    return Aws(region=REGION, endpoint_url=moto_url)


@pytest.fixture
def bootstrapped(aws: Aws) -> Aws:
    """The account as `cdk bootstrap` leaves it, as far as the prerequisite check reads it."""
    aws.client("ssm").put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value="29", Type="String")
    return aws


RUNTIME_MODEL = "bedrock-agentcore-control::agent_runtime"


@pytest.fixture
def runtime_reads_until_ready(moto_url: str) -> Iterator[Callable[[int], None]]:
    """moto's state manager: an AgentCore runtime stays CREATING for its first N reads (reset afterwards)."""

    def set_reads(reads: int) -> None:
        transition = {"progression": "manual", "times": reads}
        httpx.post(
            f"{moto_url}/moto-api/state-manager/set-transition",
            json={"model_name": RUNTIME_MODEL, "transition": transition},
        ).raise_for_status()

    yield set_reads
    httpx.post(
        f"{moto_url}/moto-api/state-manager/unset-transition", json={"model_name": RUNTIME_MODEL}
    ).raise_for_status()


def create_endpoint(aws: Aws, name: str) -> None:
    """What CloudFormation does for an Endpoint stack (moto rejects ml.g5.xlarge, so ml.g4dn.xlarge)."""
    sagemaker = aws.client("sagemaker")
    sagemaker.create_model(
        ModelName=f"{name}-model",
        ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/model",
        PrimaryContainer={"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/tts:1"},
    )
    sagemaker.create_endpoint_config(
        EndpointConfigName=f"{name}-config",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"{name}-model",
                "InstanceType": "ml.g4dn.xlarge",
                "InitialInstanceCount": 1,
            }
        ],
    )
    sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")


def create_runtime(aws: Aws, name: str, env: dict[str, str] | None = None) -> str:
    """What CloudFormation does for the Runtime stack; returns the runtime id."""
    return aws.client("bedrock-agentcore-control").create_agent_runtime(
        agentRuntimeName=name,
        agentRuntimeArtifact={
            "containerConfiguration": {"containerUri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/a:1"}
        },
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/runtime",
        networkConfiguration={"networkMode": "PUBLIC"},
        environmentVariables=env or {},
    )["agentRuntimeId"]


def moto_endpoint(name: str) -> Any:
    """moto's in-process record of an endpoint, to put it in states moto never reaches by itself."""
    from moto.sagemaker.models import sagemaker_backends

    return sagemaker_backends[ACCOUNT][REGION].endpoints[name]


def moto_runtime(runtime_id: str) -> Any:
    """moto's in-process record of an AgentCore runtime (moto never fails one by itself)."""
    from moto.bedrockagentcorecontrol.models import bedrockagentcorecontrol_backends

    return bedrockagentcorecontrol_backends[ACCOUNT][REGION].agent_runtimes[runtime_id]


def image_uris_config(tmp_path: Path, **overrides: object) -> DeployConfig:
    """A config that needs no Docker (images given as ECR URIs). The prerequisite check only looks the
    cdk CLI up, and these tests never run it (a recorder takes its place), so Python stands in for it."""
    values: dict[str, object] = {
        "region": REGION,
        "tts_image_uri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/kokoro-tts:gpu",
        "stt_image_uri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/whisper-stt:gpu",
        "agent_image_uri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/voice-agent:arm64",
        "cdk_command": (sys.executable,),
        "outdir": tmp_path / "cdk.out",
        "wait_delay_s": 0.05,
        "wait_timeout_s": 5.0,
    }
    values.update(overrides)
    return DeployConfig(**values)  # type: ignore[arg-type]


def kokoro_stand_in(directory: Path, voices: tuple[str, ...] = (DEFAULT_VOICE,)) -> Path:
    """A model directory in hexgrad's layout, as `python -m tts export-model DIR --format torch` writes it
    (tiny stand-ins: synthesis only stages the files), with the product's voice (`voices`: others too)."""
    (directory / "voices").mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text("{}")
    (directory / "kokoro-v1_0.pth").write_bytes(b"pth")
    for voice in voices:
        (directory / "voices" / f"{voice}.pt").write_bytes(b"pt")
    return directory
