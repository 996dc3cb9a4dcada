"""The deploy's synthesized stacks created by the emulator's CloudFormation, without Docker: a recorder
stands in for the other services (answering CreateAgentRuntime as AgentCore would) and the image assets
are named, not built."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from deploy.config import DeployConfig
from emulator.config import EmulatorConfig
from emulator.controller.store import Store
from emulator.images.assets import image_tag
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.services.cloudformation.control import CloudFormationControl
from emulator.services.cloudformation.resources import STACK_TAG
from emulator.services.cloudformation.shapes import ImageAsset
from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.services.cloudwatch.runtime import Metrics
from emulator.wire.awserrors import AwsError
from facts import DEFAULT_VOICE

pytestmark = pytest.mark.cdk

ACCOUNT, REGION = "123456789012", "us-east-1"
STACKS = (
    "KokoroSpeech-kokoro-82m-ModelCache",
    "KokoroSpeech-kokoro-82m-Base",
    "KokoroSpeech-kokoro-82m-Endpoint",
    "KokoroSpeech-kokoro-82m-Observability",
    "VoiceAgent-Base",
    "VoiceAgent-Runtime",
)
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/voice_agent-abcdefghij"


class Recorder:
    """Stands in for the other services: records every call, answers CreateAgentRuntime; CloudWatch is
    the emulator's own (the alarms and dashboard must be what PutMetricAlarm and PutDashboard take)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.cloudwatch = CloudWatchControl(Metrics(), REGION, ACCOUNT)

    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((service, operation, body))
        if service == "cloudwatch":
            return self.cloudwatch.operations()[operation](body)
        if operation == "CreateAgentRuntime":
            return {"agentRuntimeId": "voice_agent-abcdefghij", "agentRuntimeArn": RUNTIME_ARN}
        if operation in {"DescribeEndpoint", "GetAgentRuntime"}:  # deleted at once
            raise AwsError("ResourceNotFoundException", "gone")
        return {}

    def offers(self, service: str) -> bool:
        return service == "cloudwatch"

    def one(self, operation: str) -> dict[str, Any]:
        (body,) = [body for _, op, body in self.calls if op == operation]
        return body


class TagsWithoutBuilding:
    """Names each image asset as the emulator's builder would, without building it."""

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> tuple[str, str | None]:
        return image_tag(asset.dockerfile, asset.asset_hash), None

    def remove(self, tag: str) -> bool:
        return True


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every stack of a real synthesis (`python -m deploy synth`), created in deploy order."""
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra")
    from deploy.__main__ import main as deploy_main

    model = tmp_path_factory.mktemp("model")
    (model / "config.json").write_text("{}")
    (model / "kokoro-v1_0.pth").write_bytes(b"pth")
    (model / "voices").mkdir()
    (model / "voices" / f"{DEFAULT_VOICE}.pt").write_bytes(b"pt")
    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    argv = ["synth", "--model-dir", str(model), "--outdir", str(outdir), "--max-instance-count", "4"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert deploy_main(argv) == 0
    config = EmulatorConfig(home=tmp_path_factory.mktemp("home"), account_id=ACCOUNT, region=REGION)
    recorder, store = Recorder(), Store()
    cloudformation = CloudFormationControl(config, store, recorder, TagsWithoutBuilding())

    async def create() -> None:
        for stack in STACKS:
            url = (outdir / f"{stack}.template.json").as_uri()
            stack_id = cloudformation.CreateStack({"StackName": stack, "TemplateURL": url})["StackId"]
            await store.stacks[stack_id].task
            assert store.stacks[stack_id].status == "CREATE_COMPLETE", store.stacks[stack_id].events

    asyncio.run(create())
    return {
        "recorder": recorder,
        "cloudformation": cloudformation,
        "store": store,
        "buckets": config.home_dir / "buckets",
    }


def reasons(applied: dict[str, Any], stack: str) -> str:
    (found,) = [s for s in applied["store"].stacks.values() if s.name == stack]
    return "\n".join(f"{e.logical_id}: {e.reason}" for e in found.events if e.reason)


def test_the_model_gets_the_templates_environment_role_image_and_cached_model(applied: dict[str, Any]):
    recorder, buckets = applied["recorder"], applied["buckets"]
    model = recorder.one("CreateModel")
    bucket = "kokorospeech-kokoro-82m-modelcache-modelbucketb33d855b"
    assert (
        model["ExecutionRoleArn"]
        == f"arn:aws:iam::{ACCOUNT}:role/KokoroSpeech-kokoro-82m-Base-ModelRoleEE661428"
    )
    container = model["PrimaryContainer"]
    assert container["Environment"] == {
        "TTS_VOICE": DEFAULT_VOICE,
        "TTS_ENGINE": "torch",
        "TTS_PROVIDER": "cuda",
    }
    assert container["Image"].startswith("voice-agent-aws-rehearsal/tts-gpu:")
    uri = container["ModelDataSource"]["S3DataSource"]["S3Uri"]
    assert uri == (buckets / bucket / "models" / "kokoro-82m").resolve().as_uri() + "/"
    assert (
        buckets / bucket / "models" / "kokoro-82m" / "voices" / f"{DEFAULT_VOICE}.pt"
    ).read_bytes() == b"pt"


def test_the_endpoint_config_carries_the_ami_timeouts_and_variant(applied: dict[str, Any]):
    recorder = applied["recorder"]
    config = recorder.one("CreateEndpointConfig")
    (variant,) = config["ProductionVariants"]
    assert variant == {
        "ContainerStartupHealthCheckTimeoutInSeconds": 600,
        "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
        "InitialInstanceCount": 1,
        "InitialVariantWeight": 1,
        "InstanceType": "ml.g5.xlarge",
        "ModelDataDownloadTimeoutInSeconds": 600,
        "ModelName": recorder.one("CreateModel")["ModelName"],
        "VariantName": "AllTraffic",
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }
    assert recorder.one("CreateEndpoint") == {
        "EndpointName": "kokoro-82m",
        "EndpointConfigName": config["EndpointConfigName"],
    }


def test_what_the_emulator_cannot_honour_is_in_the_events(applied: dict[str, Any]):
    lines = reasons(applied, "KokoroSpeech-kokoro-82m-Endpoint")
    ignored = "InferenceAmiVersion, ModelDataDownloadTimeoutInSeconds"
    assert f"Variant AllTraffic: not honoured by the emulator: {ignored}" in lines
    assert "ScalableTarget: recorded, not applied" in lines and "ConcurrencyScaling: recorded" in lines
    assert "Model: not honoured by the emulator: Tags" in lines
    recorder = applied["recorder"]
    target = recorder.one("RegisterScalableTarget")
    key = {k: target[k] for k in ("ServiceNamespace", "ResourceId", "ScalableDimension")}
    assert key == {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "endpoint/kokoro-82m/variant/AllTraffic",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 4)
    policy = recorder.one("PutScalingPolicy")  # its target named by the Ref of the scalable target
    assert {k: policy[k] for k in key} == key and policy["PolicyType"] == "TargetTrackingScaling"
    # the replica's capacity as measured (deploy/capacity.py), the configuration's default
    measured = DeployConfig().target_concurrency
    assert policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == measured
    assert "ModelRoleEE661428: recorded, not created" in reasons(applied, "KokoroSpeech-kokoro-82m-Base")


def test_the_runtime_is_created_with_the_templates_properties_in_the_apis_case(applied: dict[str, Any]):
    recorder = applied["recorder"]
    runtime = recorder.one("CreateAgentRuntime")
    assert runtime["agentRuntimeName"] == "voice_agent"
    assert runtime["roleArn"] == f"arn:aws:iam::{ACCOUNT}:role/VoiceAgent-Base-RuntimeRoleFD8790A4"
    uri = runtime["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
    assert uri.startswith("voice-agent-aws-rehearsal/agent:")
    assert runtime["environmentVariables"]["AWS_REGION"] == REGION
    assert runtime["environmentVariables"]["AGENT_TTS_ENDPOINT"] == "kokoro-82m"
    assert runtime["networkConfiguration"] == {"networkMode": "PUBLIC"}
    assert runtime["protocolConfiguration"] == {"serverProtocol": "HTTP"}
    assert runtime["tags"] == {"project": "voice-agent-aws", STACK_TAG: "VoiceAgent-Runtime"}
    assert recorder.one("CreateAgentRuntimeEndpoint") == {
        "agentRuntimeId": "voice_agent-abcdefghij",
        "name": "live",
        "agentRuntimeVersion": "1",
    }
    (stack,) = applied["cloudformation"].DescribeStacks({"StackName": "VoiceAgent-Runtime"})["Stacks"]
    assert {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}["RuntimeArn"] == RUNTIME_ARN


def test_the_observability_stack_puts_its_alarms_and_dashboard_into_cloudwatch(applied: dict[str, Any]):
    cloudwatch = applied["recorder"].cloudwatch
    alarms = cloudwatch.operations()["DescribeAlarms"]({})["MetricAlarms"]
    names = {alarm.get("MetricName") for alarm in alarms} | {
        query["MetricStat"]["Metric"]["MetricName"]
        for alarm in alarms
        for query in alarm.get("Metrics", [])
        if "MetricStat" in query
    }
    assert names >= {"TimeToFirstAudio", "SessionsOverCapacity", "Invocation5XXErrors"}
    assert all(alarm["StateValue"] in {"OK", "INSUFFICIENT_DATA"} for alarm in alarms)
    (dashboard,) = cloudwatch.operations()["ListDashboards"]({})["DashboardEntries"]
    body = cloudwatch.operations()["GetDashboard"]({"DashboardName": dashboard["DashboardName"]})[
        "DashboardBody"
    ]
    assert "TimeToFirstAudio" in body
    # One definition (deploy/dashboard.py): the stack's dashboard is the one the default manifest carries.
    [carried] = [r.spec for r in load_manifest(DEFAULT_MANIFEST).resources if r.kind == "Dashboard"]
    assert (dashboard["DashboardName"], json.loads(body)) == (
        carried["DashboardName"],
        json.loads(carried["DashboardBody"]),
    )


def test_deleting_the_stacks_deletes_everything_made_in_reverse(applied: dict[str, Any]):
    recorder, store, cloudformation = applied["recorder"], applied["store"], applied["cloudformation"]
    recorder.calls.clear()

    async def delete() -> None:
        for name in reversed(STACKS):
            stack = cloudformation.find(name)
            cloudformation.DeleteStack({"StackName": name})
            await stack.task
            assert stack.status == "DELETE_COMPLETE", stack.events

    asyncio.run(delete())
    deletes = [(service, op) for service, op, _ in recorder.calls if op.startswith(("Delete", "Deregister"))]
    observability = {op for service, op in deletes[2:] if service == "cloudwatch"}
    assert observability == {"DeleteAlarms", "DeleteDashboards"}  # the Observability stack, before Endpoint
    cloudwatch = recorder.cloudwatch.operations()
    assert cloudwatch["DescribeAlarms"]({})["MetricAlarms"] == []
    assert cloudwatch["ListDashboards"]({})["DashboardEntries"] == []
    assert [d for d in deletes if d[0] != "cloudwatch"] == [
        ("bedrock-agentcore-control", "DeleteAgentRuntimeEndpoint"),
        ("bedrock-agentcore-control", "DeleteAgentRuntime"),
        ("application-autoscaling", "DeleteScalingPolicy"),
        ("application-autoscaling", "DeregisterScalableTarget"),
        ("sagemaker", "DeleteEndpoint"),
        ("sagemaker", "DeleteEndpointConfig"),
        ("sagemaker", "DeleteModel"),
    ]
    cache = next(s for s in store.stacks.values() if s.name == STACKS[0])
    skipped = [e.logical_id for e in cache.events if e.status == "DELETE_SKIPPED"]
    assert skipped == ["ModelBucketB33D855B"]  # DeletionPolicy Retain, as on AWS
