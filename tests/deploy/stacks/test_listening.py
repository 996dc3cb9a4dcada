"""The listening part's stacks (`python -m deploy synth --listen`), read from the synthesized templates:
the stt GPU image as a Docker asset, the device in the model's environment, the instance type and AMI,
least-outstanding-requests routing, autoscaling on open streams, a model role without S3, and the
agent's right to stream to exactly that endpoint; then the same stacks applied by the emulator's
CloudFormation (`--target local`), which builds the asset with its own builder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra: pip install -e '.[cdk]'")

from aws_cdk.assertions import Match

from deploy.app import build_app
from deploy.images import BIDI_LABEL
from deploy.model_dir import ModelSource
from deploy.orchestrate import product_parts
from deploy.stacks.iam import ENDPOINT_INVOKE_ACTIONS
from emulator.config import EmulatorConfig
from emulator.controller.store import Store
from emulator.images.assets import image_tag
from emulator.services.cloudformation.control import CloudFormationControl
from emulator.services.cloudformation.shapes import ImageAsset
from tests.deploy.assembly import Assembly, render, statements, synthesize
from tests.deploy.conftest import ACCOUNT, REGION, image_uris_config, kokoro_stand_in

pytestmark = pytest.mark.cdk

BASE = "WhisperListening-whisper-stt-Base"
ENDPOINT = "WhisperListening-whisper-stt-Endpoint"
KOKORO_ENDPOINT = "KokoroSpeech-kokoro-82m-Endpoint"
AGENT_BASE = "VoiceAgent-Base"
RUNTIME = "VoiceAgent-Runtime"
MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
ROUTING = {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
ARN = "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Assembly:
    return synthesize(
        tmp_path_factory.mktemp("cdk") / "cdk.out",
        "--listen",
        "--model-dir", str(kokoro_stand_in(tmp_path_factory.mktemp("model"))),
        "--stt-max-instance-count", "3",
        "--stt-target-concurrency", "6",
        "--bedrock-model-id", MODEL_ID,
    )  # fmt: skip


def test_the_stt_stacks_come_between_the_speech_and_the_agent_stacks(assembly: Assembly):
    assert assembly.dependencies(ENDPOINT) == {BASE}
    assert assembly.dependencies(BASE) == set()
    first = assembly.output.splitlines()[1]
    assert first.startswith("synthesized KokoroSpeech-kokoro-82m-ModelCache, ")
    assert (
        f"KokoroSpeech-kokoro-82m-Observability, {BASE}, {ENDPOINT}, {AGENT_BASE}, {RUNTIME} into " in first
    )


def test_the_endpoint_runs_the_stt_gpu_image_on_cuda_with_its_weights_inside(assembly: Assembly):
    [image] = assembly.docker_images(ENDPOINT)
    assert (image["dockerFile"], image["platform"]) == ("stt/Dockerfile.gpu", "linux/amd64")
    staged = assembly.directory / image["directory"]
    assert f"LABEL {BIDI_LABEL}=true" in (staged / "stt" / "Dockerfile.gpu").read_text()
    assert (staged / "stt" / "requirements" / "gpu.txt").is_file() and not (staged / "tests").exists()
    [model] = assembly.template(ENDPOINT).find_resources("AWS::SageMaker::Model").values()
    container = model["Properties"]["PrimaryContainer"]
    assert container["Image"]["Fn::Sub"].endswith(f":{image['hash']}")
    assert container["Environment"] == {"STT_DEVICE": "cuda"}
    assert "ModelDataSource" not in container, "Whisper base is in the image: no model cache"
    assert render(model["Properties"]["ExecutionRoleArn"]) == "${Import}"
    assert "whisper-stt: image ctranslate2 4.8.5, CUDA 12.8" in assembly.output
    assert (
        "whisper-stt: inference AMI al2023-ami-sagemaker-inference-gpu-4-1 (NVIDIA driver 580"
        in assembly.output
    )


def test_one_g5_instance_routed_by_least_outstanding_requests_named_whisper_stt(assembly: Assembly):
    template = assembly.template(ENDPOINT)
    [config] = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    [variant] = config["Properties"]["ProductionVariants"]
    assert {key: variant[key] for key in ("VariantName", "InstanceType", "InitialInstanceCount")} == {
        "VariantName": "AllTraffic",
        "InstanceType": "ml.g5.xlarge",
        "InitialInstanceCount": 1,
    }
    assert variant["InferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert variant["RoutingConfig"] == ROUTING
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "whisper-stt"})
    assembly.template(ENDPOINT).has_output(
        "EndpointName", {"Value": {"Fn::GetAtt": ["Endpoint", "EndpointName"]}}
    )
    # Kokoro's endpoint routes the same way, for the same reason.
    [kokoro] = assembly.template(KOKORO_ENDPOINT).find_resources("AWS::SageMaker::EndpointConfig").values()
    assert kokoro["Properties"]["ProductionVariants"][0]["RoutingConfig"] == ROUTING


def test_it_autoscales_on_open_streams_per_instance_to_the_target_given(assembly: Assembly):
    template = assembly.template(ENDPOINT)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": "endpoint/whisper-stt/variant/AllTraffic",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 3,
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyName": "whisper-stt-concurrency",
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "TargetValue": 6,
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                    },
                }
            ),
        },
    )
    # Kokoro's endpoint was not asked to autoscale.
    assembly.template(KOKORO_ENDPOINT).resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)


def test_the_model_role_pulls_and_logs_and_reads_no_bucket(assembly: Assembly):
    found = statements(assembly.template(BASE))
    assert set(found) == {"PullImage", "EcrLogin", "EndpointLogs", "EndpointMetrics"}
    logs = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group"
    log_group = f"{logs}:/aws/sagemaker/Endpoints/whisper-stt"
    assert found["EndpointLogs"]["Resource"] == [log_group, f"{log_group}:*"]
    assert not [action for s in found.values() for action in s["Action"] if action.startswith("s3:")]


def test_the_agent_streams_to_exactly_the_stt_endpoint_and_is_told_its_name(assembly: Assembly):
    found = statements(assembly.template(AGENT_BASE))
    assert found["InvokeListeningEndpoint"]["Action"] == ENDPOINT_INVOKE_ACTIONS
    assert ENDPOINT_INVOKE_ACTIONS == ["sagemaker:InvokeEndpointWithBidirectionalStream"]
    assert found["InvokeListeningEndpoint"]["Resource"] == [f"{ARN}/whisper-stt"]
    assert found["InvokeSpeechEndpoint"]["Resource"] == [f"{ARN}/kokoro-82m"]
    [runtime] = assembly.template(RUNTIME).find_resources("AWS::BedrockAgentCore::Runtime").values()
    assert runtime["Properties"]["EnvironmentVariables"]["AGENT_STT_ENDPOINT"] == "whisper-stt"


def test_without_listen_nothing_of_it_and_on_a_cpu_instance_the_cpu(tmp_path: Path):
    source = ModelSource("dir", kokoro_stand_in(tmp_path / "model"))
    config = image_uris_config(tmp_path)
    built = build_app(config, product_parts(config), tmp_path / "off", source)
    off = Assembly(Path(built.app.synth().directory))
    assert not [name for name in off.manifest["artifacts"] if name.startswith("WhisperListening")]
    assert "InvokeListeningEndpoint" not in statements(off.template(AGENT_BASE))
    [runtime] = off.template(RUNTIME).find_resources("AWS::BedrockAgentCore::Runtime").values()
    assert "AGENT_STT_ENDPOINT" not in runtime["Properties"]["EnvironmentVariables"]

    cpu = image_uris_config(tmp_path, listen=True, stt_instance_type="ml.c7i.xlarge", stt_endpoint="ears")
    built = build_app(cpu, product_parts(cpu), tmp_path / "cpu", source)
    on_cpu = Assembly(Path(built.app.synth().directory))
    assert on_cpu.docker_images(ENDPOINT) == []
    [model] = on_cpu.template(ENDPOINT).find_resources("AWS::SageMaker::Model").values()
    assert model["Properties"]["PrimaryContainer"] == {
        "Image": cpu.stt_image_uri,
        "Mode": "SingleModel",
        "Environment": {"STT_DEVICE": "cpu"},
    }
    [config_resource] = on_cpu.template(ENDPOINT).find_resources("AWS::SageMaker::EndpointConfig").values()
    [variant] = config_resource["Properties"]["ProductionVariants"]
    assert (variant["InstanceType"], "InferenceAmiVersion" in variant) == ("ml.c7i.xlarge", False)
    assert statements(on_cpu.template(BASE))["PullImage"]["Resource"] == [
        f"arn:${{AWS::Partition}}:ecr:{REGION}:{ACCOUNT}:repository/whisper-stt"
    ]
    assert statements(on_cpu.template(AGENT_BASE))["InvokeListeningEndpoint"]["Resource"] == [f"{ARN}/ears"]


class Recorder:
    """Stands in for the emulator's SageMaker and Application Auto Scaling: records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((service, operation, body))
        return {}

    def offers(self, service: str) -> bool:
        return False

    def one(self, operation: str) -> dict[str, Any]:
        (body,) = [body for _, op, body in self.calls if op == operation]
        return body


class Builder:
    """Names each image asset as the emulator's builder tags it, recording what it was asked to build."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> tuple[str, str | None]:
        self.built.append(asset.dockerfile)
        return image_tag(asset.dockerfile, asset.asset_hash), None

    def remove(self, tag: str) -> bool:
        return True


def test_the_emulators_cloudformation_applies_the_stt_stacks(assembly: Assembly, tmp_path: Path):
    """`--target local`: the same templates, created by the emulated CloudFormation from the assembly."""
    config = EmulatorConfig(home=tmp_path / "home", account_id=ACCOUNT, region=REGION)
    recorder, store, builder = Recorder(), Store(), Builder()
    cloudformation = CloudFormationControl(config, store, recorder, builder)

    async def create() -> None:
        for stack in (BASE, ENDPOINT):
            url = (assembly.directory / f"{stack}.template.json").as_uri()
            stack_id = cloudformation.CreateStack({"StackName": stack, "TemplateURL": url})["StackId"]
            await store.stacks[stack_id].task
            assert store.stacks[stack_id].status == "CREATE_COMPLETE", store.stacks[stack_id].events

    asyncio.run(create())
    [image] = assembly.docker_images(ENDPOINT)
    assert builder.built == ["stt/Dockerfile.gpu"]
    model = recorder.one("CreateModel")
    assert model["PrimaryContainer"] == {
        "Image": image_tag("stt/Dockerfile.gpu", image["hash"]),
        "Environment": {"STT_DEVICE": "cuda"},
    }
    [variant] = recorder.one("CreateEndpointConfig")["ProductionVariants"]
    assert variant["RoutingConfig"] == ROUTING
    assert recorder.one("CreateEndpoint")["EndpointName"] == "whisper-stt"
    assert recorder.one("RegisterScalableTarget")["ResourceId"] == "endpoint/whisper-stt/variant/AllTraffic"
