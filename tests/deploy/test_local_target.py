"""`--target local` without Docker: no emulator is a clear error; an emulator started with `--home` is
found again; destroy undoes the record newest first, waits until endpoints and runtimes are gone, treats
what is already gone as deleted, and refuses a record it cannot read with a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deploy.aws import Aws
from deploy.commands import run
from deploy.config import DeployConfig
from deploy.part import Identity
from deploy.parts import all_parts
from deploy.rehearsal import START_HINT, LocalToolkit, RehearsalError
from deploy.template_calls import Call

REPO = Path(__file__).resolve().parents[2]
IDENTITY = Identity("123456789012", "us-east-1", "arn:aws:iam::123456789012:user/emulator")


def test_without_an_emulator_the_rehearsal_says_how_to_start_one(tmp_path: Path):
    env = dict(os.environ, EMULATOR_HOME=str(tmp_path / "no-emulator"), DEPLOY_REHEARSAL_DIR=str(tmp_path))
    argv = [sys.executable, "-m", "deploy", "status", "--target", "local"]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("error: no emulator to rehearse on (")
    assert START_HINT in result.stderr


def gone(code: str) -> RehearsalError:
    error = RehearsalError("gone")
    error.__cause__ = ClientError({"Error": {"Code": code, "Message": "not found"}}, "Op")
    return error


class Emulator:
    """Answers the rehearsal's calls: an endpoint and a runtime that are gone after one more read."""

    def __init__(self, local: Any) -> None:
        self.local = local
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.reads = {"describe_endpoint": 1, "get_agent_runtime": 1}

    def __call__(self, call: Call) -> dict[str, Any]:
        if call.service == "local":
            return self.local(call)
        self.calls.append((call.operation, call.params))
        if call.operation in self.reads:
            self.reads[call.operation] -= 1
            if self.reads[call.operation] < 0:
                raise gone(
                    "ValidationException" if call.service == "sagemaker" else "ResourceNotFoundException"
                )
        if call.operation == "delete_model":
            raise gone("ValidationException")  # deleted by hand already
        return {}


def test_destroy_undoes_the_record_newest_first_and_leaves_nothing(tmp_path: Path):
    config = DeployConfig(
        rehearsal_dir=tmp_path / "rh", docker_command="false", wait_delay_s=0.01, target="local"
    )
    bucket = config.rehearsal_dir / "buckets" / "b"
    bucket.mkdir(parents=True)

    def undo(service: str, operation: str, **params: Any) -> dict[str, Any]:
        return {"service": service, "operation": operation, "params": params}

    record = {
        "exports": {},
        "stacks": {
            "KokoroSpeech-kokoro-82m-ModelCache": {
                "images": [],
                "undo": [undo("local", "remove_directory", path=str(bucket))],
            },
            "KokoroSpeech-kokoro-82m-Endpoint": {
                "images": ["voice-agent-aws-rehearsal/tts-gpu:1"],
                "undo": [
                    undo("sagemaker", "delete_model", ModelName="m"),
                    undo("sagemaker", "delete_endpoint_config", EndpointConfigName="c"),
                    undo("sagemaker", "delete_endpoint", EndpointName="kokoro-82m"),
                ],
            },
            "VoiceAgent-Runtime": {
                "images": ["voice-agent-aws-rehearsal/agent:1"],
                "undo": [
                    undo("bedrock-agentcore-control", "delete_agent_runtime", agentRuntimeId="r"),
                    undo(
                        "bedrock-agentcore-control",
                        "delete_agent_runtime_endpoint",
                        agentRuntimeId="r",
                        endpointName="live",
                    ),
                ],
            },
        },
    }
    config.rehearsal_dir.mkdir(exist_ok=True)
    (config.rehearsal_dir / "rehearsal.json").write_text(json.dumps(record))
    lines: list[str] = []
    toolkit = LocalToolkit(config, Aws(), echo=lambda line: None)
    emulator = Emulator(toolkit.call)
    toolkit.call = emulator  # type: ignore[method-assign]

    notice = toolkit.destroy(all_parts(config), toolkit.aws, IDENTITY, lines.append)

    assert [operation for operation, _ in emulator.calls] == [
        "delete_agent_runtime_endpoint",
        "delete_agent_runtime",
        "get_agent_runtime",
        "get_agent_runtime",
        "delete_endpoint",
        "describe_endpoint",
        "describe_endpoint",
        "delete_endpoint_config",
        "delete_model",
    ]
    assert not bucket.exists()
    assert notice.startswith("rehearsal: nothing left")
    assert not (config.rehearsal_dir / "rehearsal.json").exists()
    assert lines[0] == "VoiceAgent-Runtime: deleting 2 resource(s) and 1 image tag(s)"


def test_a_stack_already_rehearsed_is_refused_until_destroyed(tmp_path: Path):
    config = DeployConfig(rehearsal_dir=tmp_path, target="local")
    (tmp_path / "rehearsal.json").write_text(json.dumps({"exports": {}, "stacks": {"VoiceAgent-Base": {}}}))
    toolkit = LocalToolkit(config, None, echo=lambda line: None)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "deploy.rehearsal.require_identity", lambda aws: type("I", (), {"account": "1", "region": "r"})
        )
        with pytest.raises(
            RehearsalError, match="VoiceAgent-Base is already rehearsed; `destroy --target local` first"
        ):
            toolkit.deploy(["VoiceAgent-Base"])


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{garbage", "cannot be read"),
        ('{"stacks": []}', "is not a record of stacks"),
        ('{"stacks": {"VoiceAgent-Runtime": {"undo": [{"service": "sagemaker"}]}}}', "is not a record"),
        ('["stacks"]', "is not a record of stacks"),
    ],
)
def test_a_record_that_cannot_be_read_is_a_clear_error_and_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
):
    """Issue 33 item 10: a corrupt record was a traceback (JSONDecodeError, AttributeError, KeyError);
    now it is one `error:` line and exit 2, and the record stays for the user to look at."""
    config = DeployConfig(rehearsal_dir=tmp_path, target="local")
    (tmp_path / "rehearsal.json").write_text(content)
    toolkit = LocalToolkit(config, Aws(), echo=lambda line: None)
    assert run(lambda: len(toolkit.destroy(all_parts(config), toolkit.aws, IDENTITY, print))) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: the rehearsal record {tmp_path / 'rehearsal.json'}") and says in error
    assert (tmp_path / "rehearsal.json").read_text() == content


def test_a_rehearsal_directory_that_is_a_file_is_a_clear_error(tmp_path: Path):
    config = DeployConfig(rehearsal_dir=tmp_path / "file", target="local")
    config.rehearsal_dir.write_text("not a directory")
    with pytest.raises(RehearsalError, match="is a file"):
        LocalToolkit(config, Aws(), echo=lambda line: None).load()


def test_destroy_of_stacks_the_record_does_not_hold_deletes_nothing(tmp_path: Path):
    config = DeployConfig(rehearsal_dir=tmp_path, target="local")
    toolkit = LocalToolkit(config, Aws(), echo=lambda line: None)
    lines: list[str] = []
    assert toolkit.destroy(all_parts(config), toolkit.aws, IDENTITY, lines.append).startswith(
        "rehearsal: nothing left"
    )
    assert lines == []


@pytest.mark.integration
def test_an_emulator_started_with_home_is_found_by_the_deploy_after_eval_of_its_env(tmp_path: Path):
    """Issue 33 item 11: `up --home H --detach`, then `eval "$(python -m emulator env --home H)"`: the
    deploy's local path finds that emulator, through the endpoints in the environment, and through
    EMULATOR_HOME alone when only that is kept."""
    home = tmp_path / "H"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "EMULATOR_", "DEPLOY_"))}
    base |= {"EMULATOR_HOME": str(tmp_path / "default-home"), "DEPLOY_REHEARSAL_DIR": str(tmp_path / "rh")}

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
