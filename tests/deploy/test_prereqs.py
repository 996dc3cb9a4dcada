"""Prerequisites are checked against moto's server and reported all at once, with a fix for each."""

import stat
import sys
from pathlib import Path

import pytest

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import MissingPrerequisites
from deploy.orchestrate import product_parts
from deploy.parts.agent_runtime import AgentRuntimePart
from deploy.parts.endpoint import EndpointPart
from deploy.prereqs import BOOTSTRAP_VERSION_PARAMETER, check_prerequisites
from tests.deploy.conftest import ACCOUNT, REGION, create_endpoint, image_uris_config


def problems(config: DeployConfig, aws: Aws, parts=None) -> dict[str, str]:
    with pytest.raises(MissingPrerequisites) as caught:
        check_prerequisites(config, aws, parts or product_parts(config))
    return {problem.name: f"{problem.detail} | {problem.fix}" for problem in caught.value.problems}


def test_nothing_configured_reports_everything_at_once(no_aws_env: None, tmp_path: Path):
    config = DeployConfig(cdk_command=("no-such-cdk",), docker_command="no-such-docker", outdir=tmp_path)
    found = problems(config, Aws())
    assert set(found) == {"AWS region", "AWS credentials", "cdk CLI", "Docker engine", "CDK bootstrap"}
    assert "not checked" in found["CDK bootstrap"]
    assert "npm install -g aws-cdk@2" in found["cdk CLI"]
    assert "--image-uri" in found["Docker engine"]


def test_credentials_work_but_account_unbootstrapped_and_tools_missing(aws: Aws, tmp_path: Path):
    config = DeployConfig(region=REGION, cdk_command=("no-such-cdk",), docker_command="no-such-docker")
    found = problems(config, aws)
    assert set(found) == {"cdk CLI", "Docker engine", "CDK bootstrap"}
    assert f"cdk bootstrap aws://{ACCOUNT}/{REGION}" in found["CDK bootstrap"]
    assert BOOTSTRAP_VERSION_PARAMETER in found["CDK bootstrap"]


def test_an_old_bootstrap_is_a_problem(aws: Aws, tmp_path: Path):
    aws.client("ssm").put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value="5", Type="String")
    assert "older than 6" in problems(image_uris_config(tmp_path), aws)["CDK bootstrap"]


def test_everything_in_place_returns_who_deploys_where(bootstrapped: Aws, tmp_path: Path):
    identity = check_prerequisites(
        image_uris_config(tmp_path), bootstrapped, product_parts(image_uris_config(tmp_path))
    )
    assert (identity.account, identity.region) == (ACCOUNT, REGION)
    assert identity.arn.startswith("arn:aws:")


def test_image_uris_make_docker_unnecessary_but_each_missing_one_needs_it(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path, docker_command="no-such-docker")
    check_prerequisites(config, bootstrapped, product_parts(config))
    without_agent_image = image_uris_config(tmp_path, docker_command="no-such-docker", agent_image_uri=None)
    assert set(problems(without_agent_image, bootstrapped)) == {"Docker engine"}


def test_an_agent_alone_needs_its_speech_endpoint(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    found = problems(config, bootstrapped, [AgentRuntimePart(config)])
    assert set(found) == {"endpoint kokoro-82m"}
    assert "python -m deploy deploy kokoro-82m first" in found["endpoint kokoro-82m"]
    create_endpoint(bootstrapped, "kokoro-82m")
    check_prerequisites(config, bootstrapped, [AgentRuntimePart(config)])


def test_an_agent_that_listens_needs_its_stt_endpoint_too(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path, listen=True)
    create_endpoint(bootstrapped, "kokoro-82m")
    found = problems(config, bootstrapped, [AgentRuntimePart(config)])
    assert set(found) == {"endpoint whisper-stt"}
    assert found["endpoint whisper-stt"] == (
        "the agent listens through 'whisper-stt', which does not exist | "
        "python -m deploy deploy whisper-stt first, or pass --stt-endpoint"
    )
    check_prerequisites(
        config, bootstrapped, [EndpointPart(config, config.listening_endpoint), AgentRuntimePart(config)]
    )
    create_endpoint(bootstrapped, "whisper-stt")
    check_prerequisites(config, bootstrapped, [AgentRuntimePart(config)])


def test_images_must_be_in_the_deploy_region(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path, tts_image_uri=f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/tts:1")
    found = problems(config, bootstrapped)
    assert set(found) == {"kokoro-82m image region"}
    assert "is in eu-west-1, the deploy goes to us-east-1" in found["kokoro-82m image region"]
    stt_elsewhere = image_uris_config(
        tmp_path, listen=True, stt_image_uri=f"{ACCOUNT}.dkr.ecr.eu-west-1.amazonaws.com/stt:1"
    )
    assert set(problems(stt_elsewhere, bootstrapped)) == {"whisper-stt image region"}


def docker_stand_in(tmp_path: Path, buildx_platforms: str) -> str:
    """No Docker engine runs on these machines: a script answering `info` and `buildx ls` stands in."""
    script = tmp_path / "docker-stand-in"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "if sys.argv[1] == 'info': print('27.0.0')\n"
        f"elif sys.argv[1:3] == ['buildx', 'ls']: print('default  docker  running  {buildx_platforms}')\n"
        "else: sys.exit(1)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_an_arm64_agent_image_needs_a_builder_for_arm64(bootstrapped: Aws, tmp_path: Path):
    amd64_only = image_uris_config(
        tmp_path, agent_image_uri=None, docker_command=docker_stand_in(tmp_path, "linux/amd64, linux/386")
    )
    found = problems(amd64_only, bootstrapped)
    assert set(found) == {"Docker ARM64 builds"}
    assert "tonistiigi/binfmt" in found["Docker ARM64 builds"]
    with_arm64 = image_uris_config(
        tmp_path, agent_image_uri=None, docker_command=docker_stand_in(tmp_path, "linux/amd64, linux/arm64")
    )
    check_prerequisites(with_arm64, bootstrapped, product_parts(with_arm64))
