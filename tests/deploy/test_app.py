"""CDK synthesis of every stack from the real repository (its Dockerfiles), checked with
`aws_cdk.assertions`: instance type, images and their platforms, IAM, the bucket, outputs.

One synthesis through `python -m deploy synth` serves the whole module (plus one with image URIs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra: pip install -e '.[cdk]'")

from aws_cdk.assertions import Match

from deploy.app import build_app
from deploy.images import BIDI_LABEL
from deploy.model_dir import ModelSource
from deploy.orchestrate import product_parts
from deploy.stacks.iam import BEDROCK_INVOKE_ACTIONS, ENDPOINT_INVOKE_ACTIONS
from facts import DEFAULT_VOICE
from tests.deploy.assembly import Assembly, render, statements, synthesize
from tests.deploy.conftest import image_uris_config, kokoro_stand_in

pytestmark = pytest.mark.cdk

CACHE = "KokoroSpeech-kokoro-82m-ModelCache"
SPEECH_BASE = "KokoroSpeech-kokoro-82m-Base"
ENDPOINT = "KokoroSpeech-kokoro-82m-Endpoint"
OBSERVABILITY = "KokoroSpeech-kokoro-82m-Observability"
AGENT_BASE = "VoiceAgent-Base"
RUNTIME = "VoiceAgent-Runtime"
MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
# IAM has no resource-level permissions for these: `*` is the only possible resource.
UNSCOPABLE = {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kokoro_stand_in(tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Assembly:
    outdir = tmp_path_factory.mktemp("cdk") / "cdk.out"
    return synthesize(
        outdir, "--model-dir", str(model_dir), "--max-instance-count", "4", "--bedrock-model-id", MODEL_ID
    )


def test_every_stack_is_synthesized_with_deterministic_names(assembly: Assembly):
    stacks = {
        name
        for name, artifact in assembly.manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert stacks == {CACHE, SPEECH_BASE, ENDPOINT, OBSERVABILITY, AGENT_BASE, RUNTIME}
    assert assembly.dependencies(OBSERVABILITY) == {ENDPOINT}
    assert assembly.dependencies(ENDPOINT) == {CACHE, SPEECH_BASE}
    assert assembly.dependencies(SPEECH_BASE) == {CACHE}
    assert assembly.dependencies(RUNTIME) == {AGENT_BASE}
    assert assembly.dependencies(CACHE) == set() and assembly.dependencies(AGENT_BASE) == set()


def test_endpoint_runs_on_one_g5_xlarge_with_the_model_from_the_cache(assembly: Assembly):
    template = assembly.template(ENDPOINT)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g5.xlarge",
                        "InitialInstanceCount": 1,
                        "VariantName": "AllTraffic",
                        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                    }
                )
            ]
        },
    )
    template.has_resource_properties("AWS::SageMaker::Endpoint", {"EndpointName": "kokoro-82m"})
    [model] = template.find_resources("AWS::SageMaker::Model").values()
    container = model["Properties"]["PrimaryContainer"]
    source = container["ModelDataSource"]["S3DataSource"]
    assert (source["S3DataType"], source["CompressionType"]) == ("S3Prefix", "None")
    assert render(source["S3Uri"]) == "s3://${Import}/models/kokoro-82m/"
    assert container["Environment"] == {
        "TTS_VOICE": DEFAULT_VOICE,
        "TTS_ENGINE": "torch",
        "TTS_PROVIDER": "cuda",
    }
    assert render(model["Properties"]["ExecutionRoleArn"]) == "${Import}"


def test_the_endpoint_runs_on_the_ami_whose_driver_runs_the_image_cuda_build(assembly: Assembly):
    """The AMI is the newest that runs the CUDA 12.8 torch the image installs; synth names both."""
    template = assembly.template(ENDPOINT)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like({"InferenceAmiVersion": "al2023-ami-sagemaker-inference-gpu-4-1"})
            ]
        },
    )
    assert "kokoro-82m: image torch 2.10.0, CUDA 12.8" in assembly.output
    assert (
        "kokoro-82m: inference AMI al2023-ami-sagemaker-inference-gpu-4-1 (NVIDIA driver 580"
        in assembly.output
    )


def test_autoscaling_tracks_concurrent_requests_per_instance(assembly: Assembly):
    template = assembly.template(ENDPOINT)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": "endpoint/kokoro-82m/variant/AllTraffic",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 4,
            "RoleARN": Match.absent(),
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                    }
                }
            ),
        },
    )


def test_tts_image_asset_is_amd64_and_its_staged_dockerfile_has_the_label(assembly: Assembly):
    [image] = assembly.docker_images(ENDPOINT)
    assert (image["dockerFile"], image["platform"]) == ("tts/Dockerfile.gpu", "linux/amd64")
    staged = assembly.directory / image["directory"]
    assert f"LABEL {BIDI_LABEL}=true" in (staged / "tts" / "Dockerfile.gpu").read_text()
    assert (staged / "tts" / "serving" / "app.py").is_file() and (staged / "pyproject.toml").is_file()
    for left_out in (".venv", ".git", "tests", ".cache", "cdk.out"):
        assert not (staged / left_out).exists(), f"{left_out} must not be in the build context"
    [model] = assembly.template(ENDPOINT).find_resources("AWS::SageMaker::Model").values()
    assert model["Properties"]["PrimaryContainer"]["Image"]["Fn::Sub"].endswith(f":{image['hash']}")


def test_agent_image_asset_is_arm64_and_feeds_the_runtime(assembly: Assembly):
    [image] = assembly.docker_images(RUNTIME)
    assert (image["dockerFile"], image["platform"]) == ("agent/Dockerfile", "linux/arm64")
    template = assembly.template(RUNTIME)
    [runtime] = template.find_resources("AWS::BedrockAgentCore::Runtime").values()
    properties = runtime["Properties"]
    uri = properties["AgentRuntimeArtifact"]["ContainerConfiguration"]["ContainerUri"]
    assert render(uri).endswith(f":{image['hash']}")
    assert properties["AgentRuntimeName"] == "voice_agent"
    assert render(properties["RoleArn"]) == "${Import}"
    assert render(properties["EnvironmentVariables"]) == {
        "AGENT_TTS_ENDPOINT": "kokoro-82m",
        "AGENT_TTS_VOICE": DEFAULT_VOICE,
        "AGENT_BEDROCK_MODEL_ID": MODEL_ID,
        "AWS_REGION": "${AWS::Region}",
    }
    template.has_resource_properties(
        "AWS::BedrockAgentCore::RuntimeEndpoint",
        {"Name": "live", "AgentRuntimeVersion": {"Fn::GetAtt": [Match.any_value(), "AgentRuntimeVersion"]}},
    )
    assert template.find_resources("AWS::IAM::Role") == {}, "the runtime must use the base stack's role"


def test_model_cache_bucket_is_private_encrypted_tls_only_and_retained(assembly: Assembly):
    template = assembly.template(CACHE)
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "BucketEncryption": {
                        "ServerSideEncryptionConfiguration": [
                            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                        ]
                    },
                    "PublicAccessBlockConfiguration": {
                        "BlockPublicAcls": True,
                        "BlockPublicPolicy": True,
                        "IgnorePublicAcls": True,
                        "RestrictPublicBuckets": True,
                    },
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                ),
                "Version": "2012-10-17",
            }
        },
    )
    template.has_resource_properties(
        "Custom::CDKBucketDeployment",
        {"DestinationBucketKeyPrefix": "models/kokoro-82m/", "RetainOnDelete": True},
    )


def test_model_role_reads_only_its_prefix_and_writes_only_its_logs(assembly: Assembly):
    template = assembly.template(SPEECH_BASE)
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {"Statement": [Match.object_like({"Principal": {"Service": "sagemaker.amazonaws.com"}})]}
            )
        },
    )
    found = statements(template)
    assert found["PullImage"]["Resource"] == [
        "arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/"
        "cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}"
    ]
    assert found["ReadModel"]["Action"] == ["s3:GetObject"]
    assert found["ReadModel"]["Resource"] == ["${Import}/models/kokoro-82m/*"]
    assert found["ListModelPrefix"]["Condition"] == {
        "StringLike": {"s3:prefix": ["models/kokoro-82m/", "models/kokoro-82m/*"]}
    }
    arn_prefix = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}"
    log_group = f"{arn_prefix}:log-group:/aws/sagemaker/Endpoints/kokoro-82m"
    assert found["EndpointLogs"]["Resource"] == [log_group, f"{log_group}:*"]


def test_runtime_role_calls_exactly_this_endpoint_and_this_model(assembly: Assembly):
    template = assembly.template(AGENT_BASE)
    found = statements(template)
    assert found["InvokeSpeechEndpoint"]["Action"] == ENDPOINT_INVOKE_ACTIONS
    assert "sagemaker:InvokeEndpointWithBidirectionalStream" in ENDPOINT_INVOKE_ACTIONS
    assert found["InvokeSpeechEndpoint"]["Resource"] == [
        "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/kokoro-82m"
    ]
    assert found["InvokeBedrockModel"]["Action"] == BEDROCK_INVOKE_ACTIONS
    assert "bedrock:InvokeModelWithResponseStream" in BEDROCK_INVOKE_ACTIONS
    assert found["InvokeBedrockModel"]["Resource"] == [
        f"arn:${{AWS::Partition}}:bedrock:${{AWS::Region}}:${{AWS::AccountId}}:inference-profile/{MODEL_ID}",
        "arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
    ]
    assert found["RuntimeLogStreams"]["Resource"] == [
        "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
        "/aws/bedrock-agentcore/runtimes/voice_agent-*:log-stream:*"
    ]
    [role] = template.find_resources("AWS::IAM::Role").values()
    [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "bedrock-agentcore.amazonaws.com"}
    assert render(trust["Condition"]["StringEquals"]["aws:SourceAccount"]) == "${AWS::AccountId}"
    assert render(trust["Condition"]["ArnLike"]["aws:SourceArn"]).endswith(":runtime/voice_agent*")


@pytest.mark.parametrize("stack", [SPEECH_BASE, AGENT_BASE])
def test_roles_have_no_wildcards_where_a_resource_can_be_named_and_no_deployer_actions(
    assembly: Assembly, stack: str
):
    for sid, statement in statements(assembly.template(stack)).items():
        if "*" in statement["Resource"]:
            assert set(statement["Action"]) <= UNSCOPABLE, sid
        assert not [action for action in statement["Action"] if action.startswith("sagemaker:Create")], sid
        assert all(action != "*" and not action.endswith(":*") for action in statement["Action"]), sid


def test_outputs_name_what_the_commands_read_back(assembly: Assembly):
    expected = {
        CACHE: {"BucketName", "ModelDataUri"},
        SPEECH_BASE: {"ModelRoleArn"},
        ENDPOINT: {"EndpointName", "ImageUri"},
        AGENT_BASE: {"RuntimeRoleArn"},
        RUNTIME: {"RuntimeArn", "RuntimeId", "RuntimeEndpointName", "ImageUri"},
    }
    for stack, outputs in expected.items():
        names = set(assembly.template(stack).find_outputs("*"))
        assert outputs <= names, stack
    assembly.template(ENDPOINT).has_output(
        "EndpointName", {"Value": {"Fn::GetAtt": ["Endpoint", "EndpointName"]}}
    )


def test_given_image_uris_need_no_docker_and_scope_the_pull_to_their_repositories(
    tmp_path: Path, model_dir: Path
):
    config = image_uris_config(tmp_path)
    source = ModelSource("dir", model_dir)
    built = build_app(config, product_parts(config), tmp_path / "cdk.out", source)
    assembly = Assembly(Path(built.app.synth().directory))
    assert assembly.docker_images(ENDPOINT) == [] and assembly.docker_images(RUNTIME) == []
    pulls = {
        stack: statements(assembly.template(stack))["PullImage"]["Resource"]
        for stack in (SPEECH_BASE, AGENT_BASE)
    }
    assert pulls == {
        SPEECH_BASE: ["arn:${AWS::Partition}:ecr:us-east-1:123456789012:repository/kokoro-tts"],
        AGENT_BASE: ["arn:${AWS::Partition}:ecr:us-east-1:123456789012:repository/voice-agent"],
    }
    assembly.template(ENDPOINT).has_resource_properties(
        "AWS::SageMaker::Model",
        {"PrimaryContainer": Match.object_like({"Image": config.tts_image_uri})},
    )
    assembly.template(ENDPOINT).resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 0)
