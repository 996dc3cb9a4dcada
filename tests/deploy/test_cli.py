"""The command line and its two aliases (the article's `speech-infra` and `agent-infra`) end to end
against moto's server (reached through AWS_ENDPOINT_URL, as boto3 reads it): exit codes, the lines users
read, typed errors instead of tracebacks."""

import importlib
import sys
from pathlib import Path

import pytest

from deploy.__main__ import main as deploy_main
from deploy.cli import agent_infra, speech_infra
from tests.deploy.conftest import REGION, create_endpoint, create_runtime


@pytest.fixture
def moto_env(aws, moto_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_REGION", REGION)
    return aws


def test_speech_status_exit_code_follows_the_endpoint(moto_env, capsys: pytest.CaptureFixture[str]):
    assert speech_infra(["status", "kokoro-82m"]) == 1
    assert "endpoint kokoro-82m: not deployed" in capsys.readouterr().out
    create_endpoint(moto_env, "kokoro-82m")
    assert speech_infra(["status", "kokoro-82m"]) == 0
    assert "ok endpoint kokoro-82m: InService" in capsys.readouterr().out


def test_the_stt_endpoint_has_its_own_status_and_refuses_kokoros_flags(
    moto_env, capsys: pytest.CaptureFixture[str]
):
    assert speech_infra(["status", "whisper-stt"]) == 1
    assert "-- endpoint whisper-stt: not deployed" in capsys.readouterr().out
    create_endpoint(moto_env, "whisper-stt")
    assert speech_infra(["status", "whisper-stt"]) == 0
    assert "ok endpoint whisper-stt: InService" in capsys.readouterr().out
    assert deploy_main(["status"]) == 1  # the Kokoro endpoint and the runtime are not there
    assert "whisper-stt" not in capsys.readouterr().out  # nor asked for: it is opt-in
    assert deploy_main(["status", "--listen"]) == 1
    assert "ok endpoint whisper-stt: InService" in capsys.readouterr().out
    assert speech_infra(["deploy", "whisper-stt", "--instance-type", "ml.g4dn.xlarge"]) == 2
    assert capsys.readouterr().err == "error: whisper-stt takes no --instance-type (it sets kokoro-82m)\n"
    assert speech_infra(["deploy", "kokoro-82m", "--stt-instance-count", "2"]) == 2
    assert "kokoro-82m takes no --stt-instance-count (it sets whisper-stt)" in capsys.readouterr().err
    assert deploy_main(["deploy", "voice_agent", "--model-source", "hub"]) == 2
    assert "voice_agent takes no --model-source (it sets kokoro-82m)" in capsys.readouterr().err


def test_agent_status_reports_the_runtime_and_its_endpoint(moto_env, capsys: pytest.CaptureFixture[str]):
    create_runtime(moto_env, "voice_agent", {"AGENT_TTS_ENDPOINT": "kokoro-82m"})
    assert agent_infra(["status"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ok agent runtime voice_agent: READY")
    assert out[1].startswith("-- endpoint kokoro-82m: not deployed")
    assert agent_infra(["status", "--listen"]) == 1
    assert capsys.readouterr().out.splitlines()[2].startswith("-- endpoint whisper-stt: not deployed")


def test_deploy_without_anything_set_up_lists_every_problem(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("DEPLOY_CDK_CLI", "no-such-cdk")
    monkeypatch.setenv("DEPLOY_DOCKER", "no-such-docker")
    assert speech_infra(["deploy", "kokoro-82m", "--outdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 5 prerequisite(s) missing:")
    for name in ("AWS region", "AWS credentials", "cdk CLI", "Docker engine", "CDK bootstrap"):
        assert f"- {name}:" in err
    assert "Traceback" not in err


def test_bad_flags_are_typed_errors(no_aws_env: None, capsys: pytest.CaptureFixture[str]):
    assert speech_infra(["deploy", "kokoro-82m", "--instance-count", "0"]) == 2
    assert "instance count must be at least 1" in capsys.readouterr().err
    assert agent_infra(["deploy", "--bedrock-model-id", "not a model"]) == 2
    assert "not a Bedrock model ID" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        speech_infra(["deploy", "whisper-large"])
    assert caught.value.code == 2
    assert "speech-infra takes a command and one speech model: kokoro-82m or whisper-stt" in (
        capsys.readouterr().err
    )
    assert deploy_main(["status", "whisper-large"]) == 2
    assert "no part named whisper-large; the parts: kokoro-82m, whisper-stt, voice_agent" in (
        capsys.readouterr().err
    )
    assert deploy_main(["deploy", "kokoro-82m", "voice_agent", "--image-uri", "x"]) == 2
    assert "--image-uri is the image of the one part named" in capsys.readouterr().err


def test_destroy_everything_when_nothing_is_deployed_says_what_is_retained(
    moto_env, capsys: pytest.CaptureFixture[str]
):
    assert deploy_main(["destroy", "--wait-delay", "0.05"]) == 0
    out = capsys.readouterr().out
    assert (  # the stt stacks too, without --listen: a forgotten instance would bill by the hour
        out.index("VoiceAgent-Runtime: not deployed")
        < out.index("WhisperListening-whisper-stt-Endpoint: not deployed")
        < out.index("KokoroSpeech-kokoro-82m-ModelCache: not deployed")
    )
    assert "/aws/sagemaker/Endpoints/whisper-stt" in out
    assert "Retained on purpose" in out and "aws s3 rb" in out


def test_demo_is_the_agents_own_program_with_its_flags_and_exit_code(capfd: pytest.CaptureFixture[str]):
    assert agent_infra(["demo", "--help"]) == 0
    out = capfd.readouterr().out
    assert out.startswith("usage: agent-infra demo") and "--endpoint-url" in out
    assert agent_infra(["demo", "--endpoint-url", "http://127.0.0.1:9", "--no-such-flag"]) == 2
    assert "unrecognized arguments: --no-such-flag" in capfd.readouterr().err
    assert agent_infra(["demo", "--endpoint-url", "http://127.0.0.1:9", "--runs", "0"]) == 2
    assert "--runs: at least 1 run of each mode, not 0" in capfd.readouterr().err, "a median of no runs"


def test_synth_without_the_cdk_extra_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setitem(sys.modules, "aws_cdk", None)  # as if aws-cdk-lib were not installed
    for name in [name for name in sys.modules if name == "deploy.app" or name.startswith("deploy.stacks")]:
        monkeypatch.delitem(sys.modules, name)
    assert deploy_main(["synth", "--outdir", str(tmp_path)]) == 2
    assert "pip install 'voice-agent-aws[cdk]'" in capsys.readouterr().err


def test_status_and_destroy_need_no_cdk_extra(
    moto_env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setitem(sys.modules, "aws_cdk", None)  # as if aws-cdk-lib were not installed
    for name in [name for name in sys.modules if name == "deploy" or name.startswith("deploy.")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh below, as a new process would
    speech_status = importlib.import_module("deploy.cli").speech_infra
    assert speech_status(["status", "kokoro-82m"]) == 1
    assert "endpoint kokoro-82m: not deployed" in capsys.readouterr().out
    assert importlib.import_module("deploy.__main__").main(["destroy", "--wait-delay", "0.05"]) == 0
    assert "Retained on purpose" in capsys.readouterr().out
    assert "deploy.stacks" not in sys.modules
