"""`--target local` without Docker: no emulator is a clear error; the local toolkit hands each stack's
template to the emulator's CloudFormation (boto3's `cloudformation` client, an emulator in a thread),
prints what the emulator noted and the outputs, refuses a stack that exists with a clear error (exit 2)
and names a failed resource with its reason; destroy deletes the stacks through DeleteStack, as on
AWS, and says what they kept; an emulator started with `--home` is found again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.aws import Aws
from deploy.cli import run
from deploy.config import DeployConfig
from deploy.local_toolkit import BUILD_ON_ENGINE, START_HINT, LocalToolkit, RehearsalError
from deploy.parts.base import Identity
from emulator.server import Emulator, emulator_in_thread
from emulator.services.cloudformation.shapes import BUILD_PLATFORM_TAG, ENGINE_PLATFORM
from tests.emulator.support import endpoint, fast_config, manifest, model, variant

REPO = Path(__file__).resolve().parents[2]
IDENTITY = Identity("123456789012", "us-east-1", "arn:aws:iam::123456789012:user/emulator")


def test_without_an_emulator_the_local_deploy_says_how_to_start_one(tmp_path: Path):
    # Without the emulator's variables too: a process that had every endpoint's variable (seen in a run
    # of the tests in two workers) found another test's emulator by them.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "EMULATOR_", "DEPLOY_"))}
    env["EMULATOR_HOME"] = str(tmp_path / "no-emulator")
    argv = [sys.executable, "-m", "deploy", "status", "--target", "local"]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("error: no emulator to rehearse on (")
    assert START_HINT in result.stderr


@dataclass(frozen=True)
class Stacks:
    """A part as destroy sees it: its stacks, in deploy order."""

    stacks: tuple[str, ...]


def stack_template(resource_id: str) -> dict[str, Any]:
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": resource_id,
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        "MinCapacity": 1,
        "MaxCapacity": 2,
    }
    return {
        "Resources": {
            "Cache": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain"},
            "Target": {"Type": "AWS::ApplicationAutoScaling::ScalableTarget", "Properties": target},
            "Topic": {"Type": "AWS::SNS::Topic"},
        },
        "Outputs": {"BucketName": {"Value": {"Ref": "Cache"}}},
    }


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [model("echo", "echo:latest"), *endpoint("echo", [variant("AllTraffic", "echo")])]
    with emulator_in_thread(fast_config(tmp_path_factory.mktemp("emulator")), manifest(resources)) as running:
        yield running


@pytest.mark.integration
def test_the_local_toolkit_creates_reports_refuses_and_destroys_through_cloudformation(
    emu: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    config = DeployConfig(outdir=tmp_path, wait_delay_s=0.2, wait_timeout_s=30, target="local")
    (tmp_path / "Speech.template.json").write_text(
        json.dumps(stack_template("endpoint/echo/variant/AllTraffic"))
    )
    (tmp_path / "Broken.template.json").write_text(
        json.dumps(stack_template("endpoint/nope/variant/AllTraffic"))
    )
    aws = Aws.from_variables(emu.env)
    lines: list[str] = []
    toolkit = LocalToolkit(config, aws, echo=lines.append)

    toolkit.deploy(["Speech"])
    assert "Speech: Topic CREATE_COMPLETE: recorded: SNS is not emulated locally" in lines
    assert any(line.startswith("Speech: Target CREATE_COMPLETE: recorded, not applied") for line in lines)
    assert "Speech: output BucketName = speech-cache" in lines
    assert run(lambda: toolkit.deploy(["Speech"]) or 0) == 2  # issue 33 item 10: a clear error, exit 2
    assert capsys.readouterr().err == (
        "error: Speech already exists on the emulator; `destroy --target local` first\n"
    )

    with pytest.raises(
        RehearsalError, match=r"Broken was not created \(Target: ValidationException: Endpoint nope"
    ):
        toolkit.deploy(["Broken"])

    parts: Any = [Stacks(("Speech",)), Stacks(("Broken",))]
    notice = toolkit.destroy(parts, aws, IDENTITY, lines.append)
    assert "Broken: deleted" in lines and "Speech: deleted" in lines
    assert notice.splitlines()[1:] == [  # the rollback of Broken kept its retained bucket too, as AWS does
        "- Broken: Cache (AWS::S3::Bucket broken-cache)",
        "- Speech: Cache (AWS::S3::Bucket speech-cache)",
    ]
    cloudformation = aws.client("cloudformation")
    assert cloudformation.describe_stacks()["Stacks"] == []
    assert (emu.config.home_dir / "buckets" / "speech-cache").is_dir()  # DeletionPolicy Retain, as on AWS
    assert toolkit.destroy(parts[:1], aws, IDENTITY, lines.append).startswith("emulator: nothing left")
    assert lines[-1] == "Speech: not deployed, nothing to delete"


@pytest.mark.integration
def test_host_platform_tags_the_stacks_and_says_so(emu: Emulator, tmp_path: Path):
    """`--host-platform`: the emulator's CloudFormation builds the images for its engine's platform
    (emulator/images/assets.py), asked through the stack's tag; the deploy's output says so."""
    config = DeployConfig(
        outdir=tmp_path, wait_delay_s=0.2, wait_timeout_s=30, target="local", host_platform=True
    )
    template = stack_template("endpoint/echo/variant/AllTraffic")
    (tmp_path / "Fast.template.json").write_text(json.dumps(template))
    aws = Aws.from_variables(emu.env)
    lines: list[str] = []
    toolkit = LocalToolkit(config, aws, echo=lines.append)
    toolkit.deploy(["Fast"])
    try:
        assert lines[0].startswith("--host-platform: the emulator builds the images for its own platform")
        (stack,) = aws.client("cloudformation").describe_stacks(StackName="Fast")["Stacks"]
        assert stack["Tags"] == [{"Key": BUILD_PLATFORM_TAG, "Value": ENGINE_PLATFORM}]
    finally:
        toolkit.destroy([Stacks(("Fast",))], aws, IDENTITY, lines.append)  # type: ignore[list-item]


@pytest.mark.integration
def test_an_emulator_started_with_home_is_found_by_the_deploy_after_eval_of_its_env(tmp_path: Path):
    """Issue 33 item 11: `up --home H --detach`, then `eval "$(python -m emulator env --home H)"`: the
    deploy's local path finds that emulator, through the endpoints in the environment, and through
    EMULATOR_HOME alone when only that is kept."""
    home = tmp_path / "H"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "EMULATOR_", "DEPLOY_"))}
    base |= {"EMULATOR_HOME": str(tmp_path / "default-home")}

    def cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )

    up = cli("-m", "emulator", "up", "--home", str(home), "--detach", "-f", "compose/empty.yaml",
             "--http-port", "0", "--h2-port", "0", env=base)  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        lines = cli("-m", "emulator", "env", "--home", str(home), env=base).stdout.splitlines()
        exported = dict(
            line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export ")
        )
        assert exported["EMULATOR_HOME"] == str(home)
        for env in (base | exported, base | {"EMULATOR_HOME": exported["EMULATOR_HOME"]}):
            status = cli("-m", "deploy", "status", "--target", "local", env=env)
            assert status.returncode == 1, status.stderr  # it answered: nothing is deployed there
            assert "-- endpoint kokoro-82m: not deployed" in status.stdout
        assert (
            cli("-m", "deploy", "status", "--target", "local", env=base).returncode == 2
        )  # the default home
    finally:
        cli("-m", "emulator", "down", "--home", str(home), env=base)


def test_the_tag_the_deploy_writes_is_the_one_the_emulator_reads() -> None:
    """`--host-platform` reaches the emulator as its own stack tag: two texts in two packages that import
    nothing of each other, held to one here."""
    assert BUILD_ON_ENGINE == {"Key": BUILD_PLATFORM_TAG, "Value": ENGINE_PLATFORM}
