"""The synthesized stacks as boto3 calls on the emulator (`deploy/template_calls.py`), without Docker:
a recorder takes the calls and answers what the emulator would."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from deploy.rehearsal import image_tag
from deploy.template_calls import (
    STACK_TAG,
    Call,
    LocalAssets,
    Scope,
    TemplateError,
    apply_stack,
    copy_directory,
    resolve,
)

ACCOUNT, REGION = "123456789012", "us-east-1"
STACKS = (
    "KokoroSpeech-kokoro-82m-ModelCache",
    "KokoroSpeech-kokoro-82m-Base",
    "KokoroSpeech-kokoro-82m-Endpoint",
    "VoiceAgent-Base",
    "VoiceAgent-Runtime",
)
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/voice_agent-abcdefghij"


def test_intrinsics_resolve_to_local_values():
    scope = Scope(ACCOUNT, REGION, stack="S", refs={"Bucket": "b"}, exports={"E:x": "role-arn"})
    scope.attrs[("Bucket", "Arn")] = "arn:aws:s3:::b"
    value = {
        "join": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":", {"Ref": "Bucket"}]]},
        "sub": {"Fn::Sub": "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/r:${Bucket.Arn}"},
        "sub_vars": {"Fn::Sub": ["${X}-${AWS::StackName}", {"X": {"Ref": "Bucket"}}]},
        "import": {"Fn::ImportValue": "E:x"},
        "list": [{"Fn::GetAtt": ["Bucket", "Arn"]}, 3],
    }
    assert resolve(value, scope) == {
        "join": "arn:aws:b",
        "sub": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/r:arn:aws:s3:::b",
        "sub_vars": "b-S",
        "import": "role-arn",
        "list": ["arn:aws:s3:::b", 3],
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"Ref": "Nothing"}, "Ref Nothing names nothing created before it"),
        ({"Fn::ImportValue": "Other:x"}, "no stack applied exports it"),
        ({"Fn::GetAtt": ["Nothing", "Arn"]}, "Nothing.Arn is not known"),
        ({"Fn::If": ["C", 1, 2]}, "cannot resolve Fn::If"),
    ],
)
def test_what_cannot_be_resolved_is_a_clear_error(value: dict[str, Any], message: str):
    with pytest.raises(TemplateError, match=message):
        resolve(value, Scope(ACCOUNT, REGION, stack="S"))


def test_an_unknown_resource_type_is_refused(tmp_path: Path):
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {}}}}
    assets = LocalAssets(tmp_path, tmp_path / "buckets", {})
    with pytest.raises(TemplateError, match=r"cannot create AWS::SQS::Queue \(Queue\)"):
        apply_stack("S", template, Scope(ACCOUNT, REGION), assets, lambda call: {})


def test_local_image_tags_keep_the_name_the_emulator_runs_on_the_host_network():
    assert image_tag("agent/Dockerfile", "ab" * 32) == f"voice-agent-aws-rehearsal/agent:{'ab' * 8}"
    assert image_tag("tts/Dockerfile.gpu", "cd" * 32).startswith("voice-agent-aws-rehearsal/tts-gpu:")


def test_the_bucket_deployment_copies_exactly_the_staged_files(tmp_path: Path):
    source, target = tmp_path / "asset", tmp_path / "bucket" / "models" / "m"
    (source / "voices").mkdir(parents=True)
    (source / "voices" / "v.pt").write_bytes(b"v")
    target.mkdir(parents=True)
    (target / "stale.bin").write_bytes(b"old")
    copy_directory(source, target, prune=True)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == ["voices", "voices/v.pt"]


class Recorder:
    """Stands in for boto3 on the emulator: records every call, answers CreateAgentRuntime."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def __call__(self, call: Call) -> dict[str, Any]:
        self.calls.append(call)
        if call.operation == "create_agent_runtime":
            return {
                "agentRuntimeId": "voice_agent-abcdefghij",
                "agentRuntimeArn": RUNTIME_ARN,
                "agentRuntimeVersion": "1",
            }
        return {}

    def one(self, operation: str) -> dict[str, Any]:
        (params,) = [call.params for call in self.calls if call.operation == operation]
        return params


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every stack of a real synthesis (`python -m deploy synth`), applied in deploy order."""
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra")
    from deploy.__main__ import main as deploy_main

    model = tmp_path_factory.mktemp("model")
    (model / "config.json").write_text("{}")
    (model / "kokoro-v1_0.pth").write_bytes(b"pth")
    (model / "voices").mkdir()
    (model / "voices" / "jm_kumo.pt").write_bytes(b"pt")
    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    argv = ["synth", "--model-dir", str(model), "--outdir", str(outdir), "--max-instance-count", "4"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert deploy_main(argv) == 0
    images = {}
    for stack in STACKS:
        for key, image in (
            json.loads((outdir / f"{stack}.assets.json").read_text()).get("dockerImages", {}).items()
        ):
            images[key] = image_tag(image["source"]["dockerFile"], key)
    recorder, scope = Recorder(), Scope(ACCOUNT, REGION)
    buckets = tmp_path_factory.mktemp("buckets")
    results = {}
    for stack in STACKS:
        template = json.loads((outdir / f"{stack}.template.json").read_text())
        local = LocalAssets(outdir, buckets, images)
        results[stack] = apply_stack(stack, template, scope, local, lambda call: recorder(call))
    return {"recorder": recorder, "results": results, "buckets": buckets, "images": images}


@pytest.mark.cdk
def test_the_model_gets_the_templates_environment_role_image_and_cached_model(applied: dict[str, Any]):
    recorder, buckets = applied["recorder"], applied["buckets"]
    model = recorder.one("create_model")
    bucket = "kokorospeech-kokoro-82m-modelcache-modelbucketb33d855b"
    assert (
        model["ExecutionRoleArn"]
        == f"arn:aws:iam::{ACCOUNT}:role/KokoroSpeech-kokoro-82m-Base-ModelRoleEE661428"
    )
    container = model["PrimaryContainer"]
    assert container["Environment"] == {"TTS_VOICE": "jm_kumo", "TTS_ENGINE": "torch", "TTS_PROVIDER": "cuda"}
    assert container["Image"].startswith("voice-agent-aws-rehearsal/tts-gpu:")
    uri = container["ModelDataSource"]["S3DataSource"]["S3Uri"]
    assert uri == (buckets / bucket / "models" / "kokoro-82m").resolve().as_uri() + "/"
    copy = recorder.one("copy_directory")
    assert copy["target"] == str(buckets / bucket / "models" / "kokoro-82m/")
    assert (Path(copy["source"]) / "voices" / "jm_kumo.pt").read_bytes() == b"pt"


@pytest.mark.cdk
def test_the_endpoint_config_carries_the_ami_timeouts_and_variant(applied: dict[str, Any]):
    recorder = applied["recorder"]
    config = recorder.one("create_endpoint_config")
    (variant,) = config["ProductionVariants"]
    assert variant == {
        "ContainerStartupHealthCheckTimeoutInSeconds": 600,
        "InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1",
        "InitialInstanceCount": 1,
        "InitialVariantWeight": 1,
        "InstanceType": "ml.g5.xlarge",
        "ModelDataDownloadTimeoutInSeconds": 600,
        "ModelName": recorder.one("create_model")["ModelName"],
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
        "VariantName": "AllTraffic",
    }
    assert recorder.one("create_endpoint") == {
        "EndpointName": "kokoro-82m",
        "EndpointConfigName": config["EndpointConfigName"],
    }


@pytest.mark.cdk
def test_what_the_emulator_cannot_honour_is_listed(applied: dict[str, Any]):
    endpoint = applied["results"]["KokoroSpeech-kokoro-82m-Endpoint"]
    lines = "\n".join(endpoint.unhonoured)
    assert (
        "Variant AllTraffic: not honoured by the emulator: "
        "InferenceAmiVersion, ModelDataDownloadTimeoutInSeconds" in lines
    )
    assert "ScalableTarget: recorded, not applied" in lines and "ConcurrencyScaling: recorded" in lines
    assert "Model Model: not honoured by the emulator: Tags" in lines
    recorder = applied["recorder"]
    target = recorder.one("register_scalable_target")
    key = {k: target[k] for k in ("ServiceNamespace", "ResourceId", "ScalableDimension")}
    assert key == {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "endpoint/kokoro-82m/variant/AllTraffic",
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 4)
    policy = recorder.one("put_scaling_policy")  # its target named by the Ref of the scalable target
    assert {k: policy[k] for k in key} == key and policy["PolicyType"] == "TargetTrackingScaling"
    assert policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == 3
    assert any(
        "IAM role ModelRole" in line for line in applied["results"]["KokoroSpeech-kokoro-82m-Base"].unhonoured
    )


@pytest.mark.cdk
def test_the_runtime_is_created_with_the_templates_properties_in_the_apis_case(applied: dict[str, Any]):
    recorder = applied["recorder"]
    runtime = recorder.one("create_agent_runtime")
    assert runtime["agentRuntimeName"] == "voice_agent"
    assert runtime["roleArn"] == f"arn:aws:iam::{ACCOUNT}:role/VoiceAgent-Base-RuntimeRoleFD8790A4"
    uri = runtime["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
    assert uri.startswith("voice-agent-aws-rehearsal/agent:")
    assert runtime["environmentVariables"]["AWS_REGION"] == REGION
    assert runtime["environmentVariables"]["AGENT_TTS_ENDPOINT"] == "kokoro-82m"
    assert runtime["networkConfiguration"] == {"networkMode": "PUBLIC"}
    assert runtime["protocolConfiguration"] == {"serverProtocol": "HTTP"}
    assert runtime["tags"] == {"project": "voice-agent-aws", STACK_TAG: "VoiceAgent-Runtime"}
    endpoint = recorder.one("create_agent_runtime_endpoint")
    assert endpoint == {
        "agentRuntimeId": "voice_agent-abcdefghij",
        "name": "live",
        "agentRuntimeVersion": "1",
    }
    assert applied["results"]["VoiceAgent-Runtime"].outputs["RuntimeArn"] == RUNTIME_ARN


@pytest.mark.cdk
def test_undo_deletes_everything_made_in_reverse(applied: dict[str, Any]):
    results = applied["results"]
    undo = [(c.service, c.operation) for stack in STACKS for c in results[stack].undo]
    assert undo == [
        ("local", "remove_directory"),
        ("sagemaker", "delete_model"),
        ("sagemaker", "delete_endpoint_config"),
        ("sagemaker", "delete_endpoint"),
        ("application-autoscaling", "deregister_scalable_target"),
        ("application-autoscaling", "delete_scaling_policy"),
        ("bedrock-agentcore-control", "delete_agent_runtime"),
        ("bedrock-agentcore-control", "delete_agent_runtime_endpoint"),
    ]
