"""Settings, names and inputs: bad values are typed errors before anything reaches AWS or the CDK."""

from pathlib import Path

import pytest

from deploy.bedrock import model_resource_arns, split_profile
from deploy.config import DeployConfig
from deploy.errors import ConfigError
from deploy.images import has_bidi_label, parse_ecr_uri, require_bidi_label
from deploy.model_dir import check_model_dir
from deploy.orchestrate import product_parts
from deploy.parts.endpoint import EndpointPart
from facts import DEFAULT_VOICE
from tests.support.paths import REPO

ARN_PARTS = {"partition": "aws", "region": "us-west-2", "account": "111122223333"}


def test_defaults_are_one_g5_instance_without_autoscaling():
    config = DeployConfig()
    assert (config.instance_type, config.instance_count, config.speech_endpoint.autoscaling) == (
        "ml.g5.xlarge",
        1,
        False,
    )
    assert config.tts_endpoint == "kokoro-82m" and config.runtime_name == "voice_agent"
    assert config.voice == config.product.voice == DEFAULT_VOICE


def test_the_stt_endpoint_is_opt_in_on_its_own_g5_instance_without_autoscaling():
    config = DeployConfig()
    assert (config.listen, config.stt_endpoint, config.stt_instance_type) == (
        False,
        "whisper-stt",
        "ml.g5.xlarge",
    )
    assert (
        config.stt_instance_count,
        config.listening_endpoint.autoscaling,
        config.stt_target_concurrency,
    ) == (
        1,
        False,
        None,
    )


def test_the_stt_settings_come_from_the_environment_then_flags(
    monkeypatch: pytest.MonkeyPatch, no_aws_env: None
):
    monkeypatch.setenv("DEPLOY_LISTEN", "yes")
    monkeypatch.setenv("DEPLOY_STT_INSTANCE_COUNT", "2")
    monkeypatch.setenv("DEPLOY_STT_TARGET_CONCURRENCY", "6")
    config = DeployConfig.from_env()
    assert (config.listen, config.stt_instance_count, config.stt_max_instance_count) == (True, 2, 2)
    flagged = DeployConfig.from_env(stt_max_instance_count=5, stt_instance_type="ml.g4dn.xlarge")
    assert (
        flagged.listening_endpoint.autoscaling,
        flagged.stt_target_concurrency,
        flagged.stt_instance_type,
    ) == (
        True,
        6.0,
        "ml.g4dn.xlarge",
    )
    assert (flagged.instance_count, flagged.speech_endpoint.autoscaling) == (1, False), (
        "Kokoro's own settings are apart"
    )
    monkeypatch.setenv("DEPLOY_LISTEN", "maybe")
    with pytest.raises(ConfigError, match="DEPLOY_LISTEN must be"):
        DeployConfig.from_env()


def test_environment_then_flags(monkeypatch: pytest.MonkeyPatch, no_aws_env: None):
    monkeypatch.setenv("DEPLOY_INSTANCE_COUNT", "2")
    monkeypatch.setenv("DEPLOY_WAIT_DELAY_S", "1.5")
    monkeypatch.setenv("AGENT_BEDROCK_MODEL_ID", "us.amazon.nova-lite-v1:0")
    config = DeployConfig.from_env()
    assert (config.instance_count, config.max_instance_count, config.wait_delay_s) == (2, 2, 1.5)
    assert config.bedrock_model_id == "us.amazon.nova-lite-v1:0"
    flagged = DeployConfig.from_env(instance_count=3, max_instance_count=6, region=None)
    assert (flagged.instance_count, flagged.max_instance_count, flagged.speech_endpoint.autoscaling) == (
        3,
        6,
        True,
    )
    assert flagged.wait_attempts == 2400


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"instance_type": "g5.xlarge"}, "instance type"),
        ({"instance_count": 0}, "at least 1"),
        ({"instance_count": 3, "max_instance_count": 2}, "below the instance count"),
        ({"runtime_name": "voice-agent"}, "runtime name"),
        ({"tts_endpoint": "bad_name"}, "endpoint name"),
        ({"bedrock_model_id": "claude"}, "not a Bedrock model ID"),
        ({"target_concurrency": 0}, "positive"),
        ({"wait_delay_s": 0}, "positive"),
        ({"agent_image_uri": "voice-agent:latest"}, "ECR image URI"),
        ({"stt_instance_type": "g5.xlarge"}, "--stt-instance-type: the instance type"),
        ({"stt_instance_count": 0}, "--stt-instance-count: the instance count must be at least 1"),
        ({"stt_instance_count": 2, "stt_max_instance_count": 1}, "--stt-max-instance-count .1. is below"),
        ({"stt_max_instance_count": 3}, "give --stt-target-concurrency"),
        ({"stt_max_instance_count": 3, "stt_target_concurrency": 0}, "--stt-target-concurrency: the target"),
        ({"stt_endpoint": "kokoro-82m"}, "the tts and stt endpoints are both named 'kokoro-82m'"),
        ({"stt_endpoint": "bad_name"}, "endpoint name"),
        ({"stt_image_uri": "whisper-stt:gpu"}, "ECR image URI"),
        (
            {"host_platform": True},
            "--host-platform is for --target local: AWS builds the agent for linux/arm64",
        ),
    ],
)
def test_bad_settings_are_config_errors(fields: dict, message: str):
    with pytest.raises(ConfigError, match=message):
        DeployConfig(**fields)


def test_a_non_number_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, no_aws_env: None
):
    monkeypatch.setenv("DEPLOY_INSTANCE_COUNT", "two")
    with pytest.raises(ConfigError, match="DEPLOY_INSTANCE_COUNT"):
        DeployConfig.from_env()


def test_foundation_model_is_allowed_in_the_deploy_region_only():
    assert model_resource_arns("amazon.nova-lite-v1:0", **ARN_PARTS) == [
        "arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-lite-v1:0"
    ]


@pytest.mark.parametrize("profile", ["us", "eu", "apac", "global", "us-gov"])
def test_inference_profile_allows_the_profile_and_its_model_in_any_region(profile: str):
    model_id = f"{profile}.anthropic.claude-sonnet-4-6"
    assert split_profile(model_id) == (profile, "anthropic.claude-sonnet-4-6")
    assert model_resource_arns(model_id, **ARN_PARTS) == [
        f"arn:aws:bedrock:us-west-2:111122223333:inference-profile/{model_id}",
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-6",
    ]


def test_ecr_uris_parse_and_others_are_refused():
    image = parse_ecr_uri("111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/kokoro-tts:gpu-1")
    assert (image.account, image.region, image.repository) == ("111122223333", "eu-west-1", "team/kokoro-tts")
    digest = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/tts@sha256:" + "a" * 64
    assert parse_ecr_uri(digest).repository == "tts"
    for bad in (
        "kokoro-tts:latest",
        "docker.io/library/python:3.12",
        "111122223333.dkr.ecr.eu-west-1.amazonaws.com/tts",
    ):
        with pytest.raises(ConfigError, match="ECR image URI"):
            parse_ecr_uri(bad)


def test_the_real_gpu_dockerfile_carries_the_bidi_label():
    assert require_bidi_label(REPO, "tts/Dockerfile.gpu") == REPO / "tts" / "Dockerfile.gpu"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true", True),
        ('LABEL "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"="true"', True),
        ("LABEL maintainer=x com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true", True),
        ("LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=false", False),
        ("# LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true", False),
    ],
)
def test_label_detection(tmp_path: Path, line: str, expected: bool):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM python:3.12-slim\n{line}\n")
    assert has_bidi_label(dockerfile) is expected


def test_an_image_without_the_label_is_refused(tmp_path: Path):
    (tmp_path / "tts").mkdir()
    (tmp_path / "tts" / "Dockerfile.gpu").write_text("FROM python:3.12-slim\n")
    with pytest.raises(ConfigError, match="lacks `LABEL"):
        require_bidi_label(tmp_path, "tts/Dockerfile.gpu")
    with pytest.raises(ConfigError, match="not found"):
        require_bidi_label(tmp_path, "tts/Dockerfile.missing")


def test_model_dir_needs_hexgrads_layout(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        check_model_dir(tmp_path / "nope")
    (tmp_path / "kokoro-v1.0.int8.onnx").write_bytes(b"m")
    with pytest.raises(ConfigError, match=r"lacks config.json, kokoro-v1_0.pth.*export-model"):
        check_model_dir(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "kokoro-v1_0.pth").write_bytes(b"m")
    with pytest.raises(ConfigError, match=r"no voices/\*.pt"):
        check_model_dir(tmp_path)
    (tmp_path / "voices").mkdir()
    (tmp_path / "voices" / "af_heart.pt").write_bytes(b"v")
    assert check_model_dir(tmp_path) == tmp_path


def test_stack_names_are_deterministic_and_ordered():
    config = DeployConfig()
    assert EndpointPart(config, config.speech_endpoint).stacks == (
        "KokoroSpeech-kokoro-82m-ModelCache",
        "KokoroSpeech-kokoro-82m-Base",
        "KokoroSpeech-kokoro-82m-Endpoint",
        "KokoroSpeech-kokoro-82m-Observability",
    )
    assert [(part.name, part.stacks[-1]) for part in product_parts(config)] == [
        ("kokoro-82m", "KokoroSpeech-kokoro-82m-Observability"),
        ("voice_agent", "VoiceAgent-Runtime"),
    ]
    assert EndpointPart(config, config.listening_endpoint).stacks == (
        "WhisperListening-whisper-stt-Base",
        "WhisperListening-whisper-stt-Endpoint",
    )
