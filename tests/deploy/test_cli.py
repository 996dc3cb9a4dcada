"""The three command lines end to end against moto's server (reached through AWS_ENDPOINT_URL, as
boto3 reads it): exit codes, the lines users read, typed errors instead of tracebacks."""

import sys
import types
from pathlib import Path

import pytest

from deploy import agent_cli, speech_cli
from deploy.__main__ import main as deploy_main
from tests.deploy.conftest import REGION, create_endpoint, create_runtime


@pytest.fixture
def moto_env(aws, moto_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_REGION", REGION)
    return aws


def test_speech_status_exit_code_follows_the_endpoint(moto_env, capsys: pytest.CaptureFixture[str]):
    assert speech_cli.main(["status", "kokoro-82m"]) == 1
    assert "endpoint kokoro-82m: not deployed" in capsys.readouterr().out
    create_endpoint(moto_env, "kokoro-82m")
    assert speech_cli.main(["status", "kokoro-82m"]) == 0
    assert "ok endpoint kokoro-82m: InService" in capsys.readouterr().out


def test_agent_status_reports_the_runtime_and_its_endpoint(moto_env, capsys: pytest.CaptureFixture[str]):
    create_runtime(moto_env, "voice_agent", {"AGENT_TTS_ENDPOINT": "kokoro-82m"})
    assert agent_cli.main(["status"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ok agent runtime voice_agent: READY")
    assert out[1].startswith("-- endpoint kokoro-82m: not deployed")


def test_deploy_without_anything_set_up_lists_every_problem(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("DEPLOY_CDK_CLI", "no-such-cdk")
    monkeypatch.setenv("DEPLOY_DOCKER", "no-such-docker")
    assert speech_cli.main(["deploy", "kokoro-82m", "--outdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 5 prerequisite(s) missing:")
    for name in ("AWS region", "AWS credentials", "cdk CLI", "Docker engine", "CDK bootstrap"):
        assert f"- {name}:" in err
    assert "Traceback" not in err


def test_bad_flags_are_typed_errors(no_aws_env: None, capsys: pytest.CaptureFixture[str]):
    assert speech_cli.main(["deploy", "kokoro-82m", "--instance-count", "0"]) == 2
    assert "instance count must be at least 1" in capsys.readouterr().err
    assert agent_cli.main(["deploy", "--bedrock-model-id", "not a model"]) == 2
    assert "not a Bedrock model ID" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        speech_cli.main(["deploy", "whisper-large"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit):
        agent_cli.main(["deploy"])  # --bedrock-model-id is required
    assert "--bedrock-model-id" in capsys.readouterr().err


def test_destroy_everything_when_nothing_is_deployed_says_what_is_retained(
    moto_env, capsys: pytest.CaptureFixture[str]
):
    assert deploy_main(["destroy", "--wait-delay", "0.05"]) == 0
    out = capsys.readouterr().out
    assert out.index("VoiceAgent-Runtime: not deployed") < out.index(
        "KokoroSpeech-kokoro-82m-ModelCache: not deployed"
    )
    assert "Retained on purpose" in out and "aws s3 rb" in out


def test_demo_is_handed_to_the_agent_package_untouched(monkeypatch: pytest.MonkeyPatch):
    received: list[list[str]] = []
    recorder = types.ModuleType("agent.demo")
    recorder.main = lambda argv: received.append(argv) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent.demo", recorder)
    assert agent_cli.main(["demo", "--runs", "3", "--prompt", "hi there"]) == 7
    assert received == [["--runs", "3", "--prompt", "hi there"]]


def test_synth_without_the_cdk_extra_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setitem(sys.modules, "aws_cdk", None)  # as if aws-cdk-lib were not installed
    for name in [name for name in sys.modules if name == "deploy.app" or name.startswith("deploy.stacks")]:
        monkeypatch.delitem(sys.modules, name)
    assert deploy_main(["synth", "--outdir", str(tmp_path)]) == 2
    assert "pip install 'voice-agent-aws[cdk]'" in capsys.readouterr().err
