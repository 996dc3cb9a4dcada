"""CloudFormation on the emulator, driven by boto3's `cloudformation` client: CreateStack makes a
template's resources through the other services (autoscaling here, against the manifest's endpoint),
copies a BucketDeployment's staged asset into the local bucket, records what is not emulated (SNS,
CloudWatch without a cloudwatch service) with an event that says so; DescribeStackEvents,
DescribeStackResources and ListStacks show it; a failed resource rolls the stack back; DeleteStack
deletes what the stack made, newest first."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
import pytest

from emulator.cli.views import format_status
from emulator.server import Emulator, emulator_in_thread
from emulator.services.cloudformation.routes import PATH
from tests.emulator.support import boto_client, endpoint, fast_config, manifest, model, status, variant

pytestmark = pytest.mark.integration

ASSET = "ab" * 32
WAIT = {"Delay": 0.2, "MaxAttempts": 100}
TARGET = {
    "ServiceNamespace": "sagemaker",
    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    "MinCapacity": 1,
    "MaxCapacity": 4,
}


def template(resource_id: str = "endpoint/echo/variant/AllTraffic") -> dict[str, Any]:
    return {
        "Parameters": {"Suffix": {"Type": "String", "Default": "concurrency"}},
        "Resources": {
            "Bucket": {"Type": "AWS::S3::Bucket"},
            "Copy": {
                "Type": "Custom::CDKBucketDeployment",
                "Properties": {
                    "DestinationBucketName": {"Ref": "Bucket"},
                    "DestinationBucketKeyPrefix": "models/m",
                    "SourceObjectKeys": [f"{ASSET}.zip"],
                },
            },
            "Target": {
                "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
                "Properties": {**TARGET, "ResourceId": resource_id},
            },
            "Policy": {
                "Type": "AWS::ApplicationAutoScaling::ScalingPolicy",
                "Properties": {
                    "ScalingTargetId": {"Ref": "Target"},
                    "PolicyName": {"Fn::Sub": "${AWS::StackName}-${Suffix}"},
                    "PolicyType": "TargetTrackingScaling",
                    "TargetTrackingScalingPolicyConfiguration": {
                        "TargetValue": 3.0,
                        "PredefinedMetricSpecification": {
                            "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                        },
                    },
                },
            },
            "Topic": {"Type": "AWS::SNS::Topic"},
            "Mail": {
                "Type": "AWS::SNS::Subscription",
                "Properties": {
                    "TopicArn": {"Ref": "Topic"},
                    "Protocol": "email",
                    "Endpoint": "ops@example.com",
                },
            },
            "Alarm": {
                "Type": "AWS::CloudWatch::Alarm",
                "Properties": {
                    "AlarmActions": [{"Ref": "Topic"}],
                    "Namespace": "AWS/SageMaker",
                    "MetricName": "Invocation5XXErrors",
                    "Statistic": "Sum",
                    "Period": 60,
                    "EvaluationPeriods": 1,
                    "Threshold": 1,
                    "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                },
            },
        },
        "Outputs": {
            "BucketName": {"Value": {"Ref": "Bucket"}, "Export": {"Name": "Speech:Bucket"}},
            "PolicyName": {"Value": {"Fn::Join": ["/", [{"Ref": "Bucket"}, {"Ref": "Policy"}]]}},
        },
    }


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [model("echo", "echo:latest"), *endpoint("echo", [variant("AllTraffic", "echo")])]
    with emulator_in_thread(fast_config(tmp_path_factory.mktemp("emulator")), manifest(resources)) as running:
        yield running


def stacks_client(emu: Emulator) -> Any:
    """boto3's `cloudformation` client at the emulator's CloudFormation path."""
    env = emu.env
    return boto3.client(
        "cloudformation",
        endpoint_url=f"{emu.http_url}{PATH}",
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )


@pytest.fixture
def assembly(tmp_path: Path) -> Path:
    """A cloud assembly on disk: the template and the staged file asset the BucketDeployment copies."""
    (tmp_path / f"asset.{ASSET}" / "voices").mkdir(parents=True)
    (tmp_path / f"asset.{ASSET}" / "voices" / "v.pt").write_bytes(b"voice")
    return tmp_path


def write(assembly: Path, stack: str, body: dict[str, Any]) -> str:
    path = assembly / f"{stack}.template.json"
    path.write_text(json.dumps(body))
    return path.as_uri()


def settled(cloudformation: Any, stack: str) -> str:
    """The stack's status once no longer in progress (the create waiter stops at its first failure)."""
    for _ in range(WAIT["MaxAttempts"]):
        status = cloudformation.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
        if not status.endswith("_IN_PROGRESS"):
            return status
        time.sleep(WAIT["Delay"])
    raise AssertionError(f"{stack} still {status}")


def events(cloudformation: Any, stack: str) -> list[tuple[str, str, str]]:
    """(logical id, status, reason), oldest first."""
    found = cloudformation.describe_stack_events(StackName=stack)["StackEvents"]
    return [
        (e["LogicalResourceId"], e["ResourceStatus"], e.get("ResourceStatusReason", ""))
        for e in reversed(found)
    ]


def test_a_stack_is_created_described_and_deleted_newest_first(emu: Emulator, assembly: Path):
    cloudformation = stacks_client(emu)
    scaling = boto_client(emu, "application-autoscaling")
    url = write(assembly, "Speech", template())
    stack_id = cloudformation.create_stack(StackName="Speech", TemplateURL=url)["StackId"]
    cloudformation.get_waiter("stack_create_complete").wait(StackName="Speech", WaiterConfig=WAIT)

    (stack,) = cloudformation.describe_stacks(StackName="Speech")["Stacks"]
    assert stack["StackId"] == stack_id and stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    bucket = outputs["BucketName"]
    assert bucket == "speech-bucket"
    (policy,) = scaling.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]
    assert policy["PolicyName"] == "Speech-concurrency"
    assert outputs["PolicyName"] == f"{bucket}/{policy['PolicyARN']}"  # the Ref of a policy is its ARN
    copied = emu.config.home_dir / "buckets" / bucket / "models" / "m" / "voices" / "v.pt"
    assert copied.read_bytes() == b"voice"

    reasons = {
        logical: reason
        for logical, status, reason in events(cloudformation, "Speech")
        if status == "CREATE_COMPLETE"
    }
    assert "SNS is not emulated locally; no email message goes to ops@example.com" in reasons["Mail"]
    assert "recorded, not applied" in reasons["Target"]
    resources = cloudformation.describe_stack_resources(StackName="Speech")["StackResources"]
    assert [r["LogicalResourceId"] for r in resources] == [
        "Bucket",
        "Copy",
        "Target",
        "Policy",
        "Topic",
        "Mail",
        "Alarm",
    ]
    assert {r["ResourceStatus"] for r in resources} == {"CREATE_COMPLETE"}
    cloudwatch = boto_client(emu, "cloudwatch")
    (alarm,) = cloudwatch.describe_alarms()["MetricAlarms"]  # the alarm reached the emulated CloudWatch
    assert alarm["MetricName"] == "Invocation5XXErrors"
    assert alarm["AlarmName"] == resources[-1]["PhysicalResourceId"]
    summaries = cloudformation.list_stack_resources(StackName="Speech")["StackResourceSummaries"]
    assert len(summaries) == len(resources)
    with pytest.raises(botocore.exceptions.ClientError, match="AlreadyExistsException"):
        cloudformation.create_stack(StackName="Speech", TemplateURL=url)

    shown = format_status(status(emu)).splitlines()
    assert any(line.split()[:3] == ["Speech", "CREATE_COMPLETE", "7"] for line in shown)  # `emulator status`

    cloudformation.delete_stack(StackName="Speech")
    cloudformation.get_waiter("stack_delete_complete").wait(StackName="Speech", WaiterConfig=WAIT)
    assert not (emu.config.home_dir / "buckets" / bucket).exists()
    assert cloudwatch.describe_alarms()["MetricAlarms"] == []
    assert scaling.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    deleted = [
        logical for logical, status, _ in events(cloudformation, stack_id) if status == "DELETE_COMPLETE"
    ]
    assert deleted == ["Alarm", "Mail", "Topic", "Policy", "Target", "Copy", "Bucket", "Speech"]
    (summary,) = [s for s in cloudformation.list_stacks()["StackSummaries"] if s["StackId"] == stack_id]
    assert summary["StackStatus"] == "DELETE_COMPLETE"
    with pytest.raises(botocore.exceptions.ClientError, match="does not exist"):
        cloudformation.describe_stacks(StackName="Speech")


def test_a_failed_resource_is_named_with_its_reason_and_the_stack_rolls_back(emu: Emulator, assembly: Path):
    cloudformation = stacks_client(emu)
    url = write(assembly, "Broken", template(resource_id="endpoint/nope/variant/AllTraffic"))
    cloudformation.create_stack(StackName="Broken", TemplateURL=url)
    with pytest.raises(botocore.exceptions.WaiterError):
        cloudformation.get_waiter("stack_create_complete").wait(StackName="Broken", WaiterConfig=WAIT)
    assert settled(cloudformation, "Broken") == "ROLLBACK_COMPLETE"
    seen = events(cloudformation, "Broken")
    (failed,) = [(logical, reason) for logical, status, reason in seen if status == "CREATE_FAILED"]
    assert failed == (
        "Target",
        "ValidationException: Endpoint nope does not exist, or it has no endpoint config.",
    )
    assert (
        "Broken",
        "ROLLBACK_IN_PROGRESS",
        "The following resource(s) failed to create: [Target]. Rollback requested by user.",
    ) in seen
    rolled_back = [logical for logical, status, _ in seen if status == "DELETE_COMPLETE"]
    assert rolled_back == ["Target", "Copy", "Bucket"]
    assert not (emu.config.home_dir / "buckets" / "broken-bucket").exists()
    cloudformation.delete_stack(StackName="Broken")
    cloudformation.get_waiter("stack_delete_complete").wait(StackName="Broken", WaiterConfig=WAIT)


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "Either Template URL or Template Body must be specified"),
        ({"TemplateBody": "{not json"}, "Template format error"),
        ({"TemplateBody": json.dumps({"Resources": {}})}, "At least one Resources member"),
        ({"TemplateURL": "https://s3.amazonaws.com/b/t.json"}, "S3 is not emulated"),
        (
            {
                "TemplateBody": json.dumps(template()),
                "Parameters": [{"ParameterKey": "Nope", "ParameterValue": "x"}],
            },
            "do not exist in the template",
        ),
    ],
)
def test_a_template_that_cannot_be_read_is_a_validation_error(
    emu: Emulator, params: dict[str, Any], says: str
):
    cloudformation = stacks_client(emu)
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        cloudformation.create_stack(StackName="Bad", **params)
    assert raised.value.response["Error"]["Code"] == "ValidationError"
    assert says in raised.value.response["Error"]["Message"]


def test_an_unknown_resource_type_fails_its_resource(emu: Emulator):
    cloudformation = stacks_client(emu)
    body = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}
    cloudformation.create_stack(StackName="Queue", TemplateBody=json.dumps(body), DisableRollback=True)
    with pytest.raises(botocore.exceptions.WaiterError):
        cloudformation.get_waiter("stack_create_complete").wait(StackName="Queue", WaiterConfig=WAIT)
    assert (
        "Queue",
        "CREATE_FAILED",
        "AWS::SQS::Queue is not a resource type the emulator creates",
    ) in events(cloudformation, "Queue")
    assert settled(cloudformation, "Queue") == "CREATE_FAILED"
    cloudformation.delete_stack(StackName="Queue")
    cloudformation.get_waiter("stack_delete_complete").wait(StackName="Queue", WaiterConfig=WAIT)
