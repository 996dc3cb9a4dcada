"""Deploy and destroy orchestration against moto's server: order, checks first, waiting for InService.

`cdk deploy` and CloudFormation cannot run here (no AWS, and moto's CloudFormation cannot run the CDK's
Lambda-backed custom resources), so `CloudFormationStandIn`, the AWS toolkit with its `synth` and
`deploy` replaced, records each call and creates in moto what those stacks create (the endpoint, the
runtime), as CloudFormation would; its prerequisites and teardown are the real toolkit's.
"""

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from deploy.aws import Aws
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.errors import MissingPrerequisites, WaitFailed
from deploy.images import assets_repository
from deploy.orchestrate import deploy_parts, destroy_parts, product_parts
from deploy.parts.agent_runtime import AgentRuntimePart
from deploy.parts.base import Part
from deploy.parts.endpoint import EndpointPart
from tests.deploy.conftest import (
    ACCOUNT,
    REGION,
    create_endpoint,
    create_runtime,
    image_uris_config,
    moto_endpoint,
)


class CloudFormationStandIn(CdkToolkit):
    """Records synth/deploy calls; brings each endpoint up through Creating, then InService after a while."""

    def __init__(
        self, aws: Aws, config: DeployConfig, *, creating_s: float = 0.3, failure: str | None = None
    ):
        super().__init__(config)
        self.aws = aws
        self.creating_s, self.failure = creating_s, failure
        self.calls: list[tuple[str, ...]] = []
        self.endpoint_state_when_agent_deployed: str | None = None
        self.timers: list[threading.Timer] = []

    def synth(self, parts: Sequence[Part]) -> Path:
        self.calls.append(("synth", *(part.name for part in parts)))
        return self.config.outdir

    def deploy(self, stacks: Sequence[str]) -> None:
        self.calls.append(("deploy", *stacks))
        endpoints = {
            self.config.product.speech.stack("Endpoint"): self.config.tts_endpoint,
            self.config.product.listening.stack("Endpoint"): self.config.stt_endpoint,
        }
        created = [endpoints[stack] for stack in stacks if stack in endpoints]
        for name in created:
            create_endpoint(self.aws, name)
            record = moto_endpoint(name)
            record.endpoint_status = "Creating"
            timer = threading.Timer(self.creating_s, self._finish, args=(record,))
            timer.daemon = True
            timer.start()
            self.timers.append(timer)
        if not created:
            sagemaker = self.aws.client("sagemaker")
            self.endpoint_state_when_agent_deployed = sagemaker.describe_endpoint(
                EndpointName=self.config.tts_endpoint
            )["EndpointStatus"]
            create_runtime(
                self.aws, self.config.runtime_name, {"AGENT_TTS_ENDPOINT": self.config.tts_endpoint}
            )

    def _finish(self, record) -> None:
        if self.failure:
            record.endpoint_status, record.failure_reason = "Failed", self.failure
        else:
            record.endpoint_status = "InService"


def test_deploy_goes_speech_first_and_waits_for_in_service(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    cdk = CloudFormationStandIn(bootstrapped, config)
    lines: list[str] = []
    statuses = deploy_parts(config, product_parts(config), bootstrapped, cdk, echo=lines.append)
    assert cdk.calls == [
        ("synth", "kokoro-82m", "voice_agent"),
        (
            "deploy",
            "KokoroSpeech-kokoro-82m-ModelCache",
            "KokoroSpeech-kokoro-82m-Base",
            "KokoroSpeech-kokoro-82m-Endpoint",
            "KokoroSpeech-kokoro-82m-Observability",
        ),
        ("deploy", "VoiceAgent-Base", "VoiceAgent-Runtime"),
    ]
    assert cdk.endpoint_state_when_agent_deployed == "InService"
    assert [(status.state, status.ready) for status in statuses] == [("InService", True), ("READY", True)]
    assert lines[0] == f"deploying to account {ACCOUNT} in {REGION} as arn:aws:sts::{ACCOUNT}:user/moto"


def test_with_listen_the_stt_endpoint_goes_up_between_the_speech_endpoint_and_the_agent(
    bootstrapped: Aws, tmp_path: Path
):
    config = image_uris_config(tmp_path, listen=True)
    cdk = CloudFormationStandIn(bootstrapped, config)
    lines: list[str] = []
    statuses = deploy_parts(config, product_parts(config), bootstrapped, cdk, echo=lines.append)
    assert [call[:2] for call in cdk.calls] == [
        ("synth", "kokoro-82m"),
        ("deploy", "KokoroSpeech-kokoro-82m-ModelCache"),
        ("deploy", "WhisperListening-whisper-stt-Base"),
        ("deploy", "VoiceAgent-Base"),
    ]
    assert cdk.calls[0] == ("synth", "kokoro-82m", "whisper-stt", "voice_agent")
    assert cdk.calls[2] == (
        "deploy",
        "WhisperListening-whisper-stt-Base",
        "WhisperListening-whisper-stt-Endpoint",
    )
    assert [str(status).split(" (")[0] for status in statuses] == [
        "ok endpoint kokoro-82m: InService",
        "ok endpoint whisper-stt: InService",
        "ok agent runtime voice_agent: READY",
    ]
    assert "whisper-stt: waiting (a check every 0.05 s)" in lines


def test_a_failed_endpoint_stops_the_deploy_before_the_agent(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    cdk = CloudFormationStandIn(bootstrapped, config, failure="Image pull failed: access denied")
    with pytest.raises(WaitFailed, match=r"Failed.*Image pull failed: access denied"):
        deploy_parts(config, product_parts(config), bootstrapped, cdk, echo=lambda line: None)
    assert [call[-1] for call in cdk.calls] == ["voice_agent", "KokoroSpeech-kokoro-82m-Observability"]


def test_missing_prerequisites_stop_everything_before_synth(aws: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path, cdk_command=("no-such-cdk",))
    cdk = CloudFormationStandIn(aws, config)
    with pytest.raises(MissingPrerequisites) as caught:
        deploy_parts(config, product_parts(config), aws, cdk, echo=lambda line: None)
    assert {problem.name for problem in caught.value.problems} == {"cdk CLI", "CDK bootstrap"}
    assert cdk.calls == []


def test_the_agent_waits_until_its_runtime_is_ready(
    bootstrapped: Aws, tmp_path: Path, runtime_reads_until_ready
):
    runtime_reads_until_ready(4)
    config = image_uris_config(tmp_path)
    create_endpoint(bootstrapped, config.tts_endpoint)
    cdk = CloudFormationStandIn(bootstrapped, config)
    [status] = deploy_parts(config, [AgentRuntimePart(config)], bootstrapped, cdk, echo=lambda line: None)
    assert (status.state, status.ready) == ("READY", True)


def test_without_waiting_the_status_is_reported_as_it_is(bootstrapped: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    cdk = CloudFormationStandIn(bootstrapped, config, creating_s=5)
    [status] = deploy_parts(
        config,
        [EndpointPart(config, config.speech_endpoint)],
        bootstrapped,
        cdk,
        wait=False,
        echo=lambda line: None,
    )
    assert (status.state, status.ready) == ("Creating", False)
    for timer in cdk.timers:
        timer.cancel()


TEMPLATE = """{"Resources": {"Marker": {"Type": "AWS::SNS::Topic"}}, "Outputs": {%s}}"""


def create_stack(aws: Aws, name: str, outputs: dict[str, str]) -> None:
    body = ", ".join(f'"{key}": {{"Value": "{value}"}}' for key, value in outputs.items())
    aws.client("cloudformation").create_stack(StackName=name, TemplateBody=TEMPLATE % body)


def test_destroy_deletes_in_reverse_order_and_names_what_is_retained(aws: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    repository = assets_repository(ACCOUNT, REGION)
    image = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{repository}:3f2a"
    outputs = {
        "KokoroSpeech-kokoro-82m-ModelCache": {"BucketName": "kokorospeech-cache-abc"},
        "KokoroSpeech-kokoro-82m-Endpoint": {"ImageUri": image},
        "VoiceAgent-Runtime": {"ImageUri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/mine/agent:v2"},
    }
    for part in product_parts(config):
        for name in part.stacks:
            create_stack(aws, name, outputs.get(name, {"Marker": "x"}))
    deleted: list[str] = []
    aws.session.events.register(
        "before-parameter-build.cloudformation.DeleteStack",
        lambda params, **_: deleted.append(params["StackName"]),
    )
    lines: list[str] = []
    notice = destroy_parts(config, product_parts(config), aws, CdkToolkit(config), echo=lines.append)
    assert deleted == [
        "VoiceAgent-Runtime",
        "VoiceAgent-Base",
        "KokoroSpeech-kokoro-82m-Observability",
        "KokoroSpeech-kokoro-82m-Endpoint",
        "KokoroSpeech-kokoro-82m-Base",
        "KokoroSpeech-kokoro-82m-ModelCache",
    ]
    remaining = aws.client("cloudformation").describe_stacks()["Stacks"]
    assert [stack["StackStatus"] for stack in remaining] == []
    assert f"aws s3 rb s3://kokorospeech-cache-abc --force --region {REGION}" in notice
    assert (
        f"aws ecr batch-delete-image --repository-name {repository} "
        f"--image-ids imageTag=3f2a --region {REGION}" in notice
    )
    assert "CDKToolkit" in notice
    assert f"aws ecr delete-repository --repository-name mine/agent --force --region {REGION}" in notice
    assert "/aws/sagemaker/Endpoints/kokoro-82m" in notice
    assert lines[-1] == notice


def test_destroy_takes_the_stt_endpoint_down_after_the_agent_and_names_its_image_and_logs(
    aws: Aws, tmp_path: Path
):
    config = image_uris_config(tmp_path)
    parts = product_parts(config, listening=True)
    image = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{assets_repository(ACCOUNT, REGION)}:9c1e"
    for name in ("VoiceAgent-Runtime", *EndpointPart(config, config.listening_endpoint).stacks):
        create_stack(aws, name, {"ImageUri": image} if name.endswith("-Endpoint") else {"Marker": "x"})
    deleted: list[str] = []
    aws.session.events.register(
        "before-parameter-build.cloudformation.DeleteStack",
        lambda params, **_: deleted.append(params["StackName"]),
    )
    lines: list[str] = []
    notice = destroy_parts(config, parts, aws, CdkToolkit(config), echo=lines.append)
    assert deleted == [
        "VoiceAgent-Runtime",
        "WhisperListening-whisper-stt-Endpoint",
        "WhisperListening-whisper-stt-Base",
    ]
    assert lines.index("VoiceAgent-Base: not deployed, nothing to delete") < lines.index(
        "WhisperListening-whisper-stt-Endpoint: deleting"
    )
    assert "- ECR: the whisper-stt image " in notice and "imageTag=9c1e" in notice
    assert "/aws/sagemaker/Endpoints/whisper-stt" in notice


def test_destroy_with_nothing_deployed_still_says_what_may_be_left(aws: Aws, tmp_path: Path):
    config = image_uris_config(tmp_path)
    lines: list[str] = []
    notice = destroy_parts(
        config, [EndpointPart(config, config.speech_endpoint)], aws, CdkToolkit(config), echo=lines.append
    )
    assert "KokoroSpeech-kokoro-82m-Endpoint: not deployed, nothing to delete" in lines
    assert "starts_with(Name, 'kokorospeech-kokoro-82m-modelcache')" in notice
    assert f"aws ecr list-images --repository-name {assets_repository(ACCOUNT, REGION)}" in notice


def test_the_real_toolkit_deploys_exactly_the_synthesized_assembly(tmp_path: Path):
    config = DeployConfig(outdir=tmp_path / "cdk.out", cdk_command=("npx", "aws-cdk@2"))
    argv = CdkToolkit(config).deploy_argv(["VoiceAgent-Base", "VoiceAgent-Runtime"])
    assert argv == [
        "npx", "aws-cdk@2", "deploy", "--app", str(tmp_path / "cdk.out"), "--exclusively",
        "--require-approval", "never", "--outputs-file", str(tmp_path / "cdk.out" / "outputs.json"),
        "VoiceAgent-Base", "VoiceAgent-Runtime",
    ]  # fmt: skip
