"""Issue 46's acceptance: the product is defined once (deploy/product.py). Changing the voice, or the
instance type, in the definition changes it in the emulator's manifests (`python -m deploy manifests`),
in the local stack that runs them (local_stack/) and in the synthesized templates
(`python -m deploy synth`), with nothing else edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra: pip install -e '.[cdk]'")

from deploy import product
from deploy.cli import main as deploy_main
from local_stack.stack import stack_manifest
from tests.deploy.assembly import render, synthesize
from tests.deploy.conftest import kokoro_stand_in

pytestmark = pytest.mark.cdk

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"


def one_of_each(manifest: Any) -> dict[str, dict[str, Any]]:
    """The stack's resources by kind (the default stack has one of each)."""
    return {resource.kind: resource.spec for resource in manifest.resources}


@pytest.mark.parametrize(
    ("choice", "value"),
    [("voice", "af_bella"), ("instance_type", "ml.g4dn.xlarge")],
    ids=["voice", "instance"],
)
def test_one_change_in_the_definition_reaches_the_manifests_the_local_stack_and_the_templates(
    choice: str, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    changed = product.define(**{choice: value})
    monkeypatch.setattr(product, "PRODUCT", changed)
    voice, instance_type = changed.voice, changed.speech.instance_type
    assert (voice, instance_type) != (product.define().voice, product.define().speech.instance_type)

    compose = tmp_path / "compose"
    assert deploy_main(["manifests", "--outdir", str(compose)]) == 0
    local = one_of_each(stack_manifest(compose / "emulator.yaml"))  # what local_stack() runs
    assert local["Model"]["PrimaryContainer"]["Environment"]["TTS_VOICE"] == voice
    assert local["AgentRuntime"]["environmentVariables"]["AGENT_TTS_VOICE"] == voice
    assert local["EndpointConfig"]["ProductionVariants"][0]["InstanceType"] == instance_type
    listening = one_of_each(stack_manifest(compose / "listen.yaml"))
    assert listening["EndpointConfig"]["ProductionVariants"][0]["InstanceType"] == instance_type

    model_dir = kokoro_stand_in(tmp_path / "model", voices=(voice,))
    assembly = synthesize(
        tmp_path / "cdk.out", "--listen", "--model-dir", str(model_dir), "--bedrock-model-id", MODEL_ID
    )
    for stack in ("KokoroSpeech-kokoro-82m-Endpoint", "WhisperListening-whisper-stt-Endpoint"):
        [config] = assembly.template(stack).find_resources("AWS::SageMaker::EndpointConfig").values()
        assert config["Properties"]["ProductionVariants"][0]["InstanceType"] == instance_type, stack
    [model] = (
        assembly.template("KokoroSpeech-kokoro-82m-Endpoint").find_resources("AWS::SageMaker::Model").values()
    )
    assert model["Properties"]["PrimaryContainer"]["Environment"]["TTS_VOICE"] == voice
    [runtime] = (
        assembly.template("VoiceAgent-Runtime").find_resources("AWS::BedrockAgentCore::Runtime").values()
    )
    assert render(runtime["Properties"]["EnvironmentVariables"])["AGENT_TTS_VOICE"] == voice


def test_a_model_source_without_the_voice_is_refused_before_synthesis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    model_dir = kokoro_stand_in(tmp_path / "model", voices=("jf_alpha",))
    argv = ["synth", "--model-dir", str(model_dir), "--outdir", str(tmp_path / "cdk.out")]
    assert deploy_main([*argv, "--voice", "af_bella"]) == 2
    assert capsys.readouterr().err == (
        "error: the model source has no voice 'af_bella' (it has jf_alpha); pass --voice with one of them\n"
    )
    assert deploy_main([*argv, "--voice", "jf_alpha", "kokoro-82m"]) == 0
