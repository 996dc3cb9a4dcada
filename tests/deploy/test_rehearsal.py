"""`python -m deploy aws --target local` end to end: the synthesized stacks given to the CloudFormation of
an emulator started with no resources (compose/empty.yaml), which builds the GPU image from the asset
manifest and serves it on the CPU, and the agent for linux/arm64 as AgentCore runs it (under QEMU: CI's
arm64 phase has cached its layers), then `tools.demo` against the runtime's ARN (the stack's output),
then destroy through DeleteStack, which leaves no stack, container or image tag behind (the model
cache bucket is kept, as its DeletionPolicy says)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from deploy.aws import Aws
from emulator.controller.runtimes.docker import OWNER_HOME

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra")

pytestmark = [pytest.mark.docker, pytest.mark.integration, pytest.mark.gpu_image, pytest.mark.cdk]

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


@pytest.fixture
def emulator_home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An empty docker emulator on free ports; the environment that finds it."""
    env = dict(os.environ, EMULATOR_HOME=str(tmp_path / "emulator"))
    up = [PYTHON, "-m", "emulator", "up", "--runtime", "docker", "--detach", "-f", "compose/empty.yaml"]
    subprocess.run([*up, "--http-port", "0", "--h2-port", "0"], cwd=REPO, env=env, check=True, timeout=600)
    try:
        yield env
    finally:
        subprocess.run([PYTHON, "-m", "emulator", "down"], cwd=REPO, env=env, check=False, timeout=120)


def run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    print(result.stdout[-4000:], result.stderr[-4000:])
    return result


# Measured on the 2-core machine with the GPU image's layers cached: about 2 min to deploy (the image's
# last layers, the model load on the CPU), 1 min for the demo, 45 s to destroy; from nothing add ~9 min.
# The arm64 agent, its layers cached by the arm64 phase: the agent stack alone deployed in 1m53 s (its
# start under QEMU), the demo's first turn 87 s, destroy 37 s (2 shared cores, load about 10).
@pytest.mark.timeout(2400)
def test_rehearsal_deploys_speaks_and_destroys(
    emulator_home: dict[str, str], torch_model_dir: Path, tmp_path: Path
):
    env = emulator_home
    deploy = [PYTHON, "-m", "deploy"]
    aws = run(
        [
            *deploy, "aws", "--target", "local",
            "--model-dir", str(torch_model_dir),
            "--outdir", str(tmp_path / "cdk.out"),
            "--max-instance-count", "2",
            "--wait-delay", "2", "--wait-timeout", "900",
        ],
        env,
        timeout=1800,
    )  # fmt: skip
    assert aws.returncode == 0, aws.stderr
    assert "the image of agent/Dockerfile is linux/arm64, as on AWS" in aws.stdout
    assert "not honoured by the emulator: InferenceAmiVersion" in aws.stdout
    assert "recorded, not applied (the emulator runs the variant's InitialInstanceCount" in aws.stdout

    status = run([*deploy, "status", "--target", "local"], env, timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    shown = run([PYTHON, "-m", "emulator", "status"], env, timeout=60).stdout
    assert "AUTOSCALING (recorded, not applied)" in shown
    assert any(
        line.split()[:4] == ["voice_agent", "READY", "1", "linux/arm64"] for line in shown.splitlines()
    )
    assert any(
        line.split()[:3] == ["endpoint/kokoro-82m/variant/AllTraffic", "1", "2"]
        for line in shown.splitlines()
    )

    logs = run([PYTHON, "-m", "emulator", "logs", "-n", "400"], env, timeout=60)
    assert "TTS_PROVIDER=cuda is overridden to cpu" in logs.stdout

    emulator_env = json.loads(run([PYTHON, "-m", "emulator", "env", "--json"], env, timeout=60).stdout)
    cloudformation = Aws.from_variables(emulator_env).client("cloudformation")
    (runtime,) = cloudformation.describe_stacks(StackName="VoiceAgent-Runtime")["Stacks"]
    arn = {o["OutputKey"]: o["OutputValue"] for o in runtime["Outputs"]}["RuntimeArn"]
    images = [line.rsplit(" is ", 1)[1] for line in aws.stdout.splitlines() if ": image asset " in line]
    assert len(images) == 2, aws.stdout
    demo = run(
        [PYTHON, "-m", "tools.demo", "--endpoint-url", arn, "--runs", "1", "--json"],
        env | emulator_env,
        timeout=600,
    )
    assert demo.returncode == 0, demo.stderr
    summary = json.loads(demo.stdout)
    assert summary["bidi"]["ttfa_ms"] > 0 and summary["batch"]["ttfa_ms"] > 0

    destroy = run([*deploy, "destroy", "--target", "local"], env, timeout=600)
    assert destroy.returncode == 0, destroy.stderr
    assert "kept on purpose (DeletionPolicy: Retain" in destroy.stdout and "ModelBucket" in destroy.stdout
    client = docker.from_env()
    left = client.containers.list(
        all=True, filters={"label": f"{OWNER_HOME}={Path(env['EMULATOR_HOME']).resolve()}"}
    )
    assert left == []
    assert [tag for tag in images if client.images.list(name=tag)] == []
    assert cloudformation.describe_stacks()["Stacks"] == []
