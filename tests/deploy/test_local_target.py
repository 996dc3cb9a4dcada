"""`--target local` without Docker: no emulator is a clear error; destroy undoes the record newest first,
waits until endpoints and runtimes are gone, and treats what is already gone as deleted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from deploy.config import DeployConfig
from deploy.parts import all_parts
from deploy.rehearsal import START_HINT, LocalToolkit, RehearsalError
from deploy.template_calls import Call

REPO = Path(__file__).resolve().parents[2]


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
    toolkit = LocalToolkit(config, echo=lines.append, env={})
    emulator = Emulator(toolkit.call)
    toolkit.call = emulator  # type: ignore[method-assign]

    notice = toolkit.destroy(all_parts(config))

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
    toolkit = LocalToolkit(config, echo=lambda line: None, env={})
    toolkit.aws = None  # type: ignore[assignment]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "deploy.rehearsal.require_identity", lambda aws: type("I", (), {"account": "1", "region": "r"})
        )
        with pytest.raises(
            RehearsalError, match="VoiceAgent-Base is already rehearsed; `destroy --target local` first"
        ):
            toolkit.deploy(["VoiceAgent-Base"])
