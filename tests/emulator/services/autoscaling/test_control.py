"""Application Auto Scaling on the emulator, driven by boto3's `application-autoscaling` client: a
variant's scalable target and target-tracking policy are validated, kept, described and shown by
`emulator status` (recorded, not applied: the endpoint keeps the instance count its config names)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import botocore.exceptions
import httpx
import pytest

from emulator.cli.views import format_status
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import boto_client, endpoint, fast_config, manifest, model, status, variant

pytestmark = pytest.mark.integration

RESOURCE = "endpoint/echo/variant/AllTraffic"
TARGET = {
    "ServiceNamespace": "sagemaker",
    "ResourceId": RESOURCE,
    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
}
POLICY = {
    **TARGET,
    "PolicyName": "echo-concurrency",
    "PolicyType": "TargetTrackingScaling",
    "TargetTrackingScalingPolicyConfiguration": {
        "TargetValue": 3.0,
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
        },
        "ScaleOutCooldown": 60,
        "ScaleInCooldown": 300,
    },
}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [model("echo", "echo:latest"), *endpoint("echo", [variant("AllTraffic", "echo")])]
    with emulator_in_thread(fast_config(tmp_path_factory.mktemp("emulator")), manifest(resources)) as running:
        yield running


@pytest.fixture(scope="module")
def scaling(emu: Emulator):
    return boto_client(emu, "application-autoscaling")


def error_code(call, **params) -> str:
    with pytest.raises(botocore.exceptions.ClientError) as caught:
        call(**params)
    return caught.value.response["Error"]["Code"]


def test_a_target_and_its_policy_are_recorded_described_and_shown_not_applied(emu: Emulator, scaling):
    arn = scaling.register_scalable_target(**TARGET, MinCapacity=1, MaxCapacity=4)["ScalableTargetARN"]
    assert arn.startswith("arn:aws:application-autoscaling:")
    policy_arn = scaling.put_scaling_policy(**POLICY)["PolicyARN"]
    assert policy_arn.endswith(f":resource/sagemaker/{RESOURCE}:policyName/echo-concurrency")

    (target,) = scaling.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
    assert (target["ResourceId"], target["MinCapacity"], target["MaxCapacity"]) == (RESOURCE, 1, 4)
    assert target["ScalableTargetARN"] == arn
    (policy,) = scaling.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=RESOURCE)[
        "ScalingPolicies"
    ]
    assert policy["PolicyARN"] == policy_arn
    assert policy["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] == 3.0

    # Re-registering changes the bounds in place (as the service does), keeping the policy.
    scaling.register_scalable_target(**TARGET, MaxCapacity=6)
    seen = status(emu)
    assert seen["autoscaling"] == [
        {
            "resource": RESOURCE,
            "dimension": TARGET["ScalableDimension"],
            "min": 1,
            "max": 6,
            "policies": [
                {
                    "name": "echo-concurrency",
                    "type": "TargetTrackingScaling",
                    "target": 3.0,
                    "metric": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
                }
            ],
        }
    ]
    shown = format_status(seen)
    assert "AUTOSCALING (recorded, not applied)" in shown
    assert any(line.split()[:3] == [RESOURCE, "1", "6"] for line in shown.splitlines())
    (ep,) = seen["endpoints"]
    assert [v["desired"] for v in ep["variants"]] == [1]  # not applied

    scaling.delete_scaling_policy(**TARGET, PolicyName="echo-concurrency")
    scaling.deregister_scalable_target(**TARGET)
    assert scaling.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []
    assert status(emu)["autoscaling"] == []


def test_what_the_service_refuses_is_refused_with_its_error(scaling):
    register = scaling.register_scalable_target
    # Another endpoint, another variant, a new target without bounds, max below min.
    other = {**TARGET, "ResourceId": "endpoint/missing/variant/AllTraffic"}
    assert error_code(register, **other, MinCapacity=1, MaxCapacity=2) == "ValidationException"
    wrong_variant = {**TARGET, "ResourceId": "endpoint/echo/variant/Blue"}
    assert error_code(register, **wrong_variant, MinCapacity=1, MaxCapacity=2) == "ValidationException"
    assert error_code(register, **TARGET) == "ValidationException"
    assert error_code(register, **TARGET, MinCapacity=3, MaxCapacity=2) == "ValidationException"
    ecs = {**TARGET, "ServiceNamespace": "ecs"}
    assert error_code(register, **ecs, MinCapacity=1, MaxCapacity=2) == "ValidationException"
    # A policy without its target, a policy without its configuration, and deleting what is not there.
    assert error_code(scaling.put_scaling_policy, **POLICY) == "ObjectNotFoundException"
    register(**TARGET, MinCapacity=1, MaxCapacity=2)
    bare = {k: v for k, v in POLICY.items() if k != "TargetTrackingScalingPolicyConfiguration"}
    assert error_code(scaling.put_scaling_policy, **bare) == "ValidationException"
    delete = scaling.delete_scaling_policy
    assert error_code(delete, **TARGET, PolicyName="nope") == "ObjectNotFoundException"
    scaling.deregister_scalable_target(**TARGET)
    assert error_code(scaling.deregister_scalable_target, **TARGET) == "ObjectNotFoundException"


def _tracking(**configuration: object) -> dict:
    return {**POLICY, "TargetTrackingScalingPolicyConfiguration": configuration}


def _custom_metric(name: str) -> dict:
    return _tracking(
        TargetValue=3.0,
        CustomizedMetricSpecification={
            "MetricName": name,
            "Namespace": "AWS/SageMaker",
            "Statistic": "Average",
        },
    )


NAMESPACE = {"ServiceNamespace": "sagemaker"}
HOSTILE = {
    # What boto3 would refuse before sending, sent anyway: the model's types, checked in the wire.
    "ResourceId an object": ("describe_scaling_policies", {**TARGET, "ResourceId": {"a": 1}}),
    "ScalableDimension a list": ("describe_scalable_targets", {**NAMESPACE, "ScalableDimension": ["x"]}),
    "PredefinedMetricSpecification a string": (
        "put_scaling_policy",
        _tracking(TargetValue=3.0, PredefinedMetricSpecification="x"),
    ),
    "PredefinedMetricSpecification a list": (
        "put_scaling_policy",
        _tracking(TargetValue=3.0, PredefinedMetricSpecification=[1, 2]),
    ),
    "TargetValue a string": ("put_scaling_policy", _tracking(TargetValue="3")),
    # The model's constraints: its pattern for names, its enums, required members.
    "PolicyName with terminal escapes": (
        "put_scaling_policy",
        {**POLICY, "PolicyName": "\x1b[2J\x1b[Hforged row\n"},
    ),
    "PolicyType not one of its enum": ("put_scaling_policy", {**POLICY, "PolicyType": "Magic"}),
    "NextToken not text": ("describe_scaling_policies", {**TARGET, "NextToken": "\x00\x01"}),
    "TargetValue missing": ("put_scaling_policy", _tracking(DisableScaleIn=True)),
    # What the service requires beyond its model (its API reference).
    "TargetValue -5": (
        "put_scaling_policy",
        _tracking(
            TargetValue=-5.0,
            PredefinedMetricSpecification={"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
        ),
    ),
    "an empty StepScaling configuration": (
        "put_scaling_policy",
        {**TARGET, "PolicyName": "steps", "PolicyType": "StepScaling", "StepScalingPolicyConfiguration": {}},
    ),
    "a 256-character MetricName": ("put_scaling_policy", _custom_metric("m" * 256)),
    "MaxResults 0": ("describe_scalable_targets", {**NAMESPACE, "MaxResults": 0}),
    "MaxResults 51": ("describe_scalable_targets", {**NAMESPACE, "MaxResults": 51}),
    "policies' MaxResults 11": ("describe_scaling_policies", {**TARGET, "MaxResults": 11}),
}
EXPECTED = {
    "ResourceId an object": "SerializationException",
    "ScalableDimension a list": "SerializationException",
    "PredefinedMetricSpecification a string": "SerializationException",
    "PredefinedMetricSpecification a list": "SerializationException",
    "TargetValue a string": "SerializationException",
}


OPERATIONS = {
    "describe_scaling_policies": "DescribeScalingPolicies",
    "describe_scalable_targets": "DescribeScalableTargets",
    "put_scaling_policy": "PutScalingPolicy",
}


def send_unchecked(emu: Emulator, operation: str, params: dict) -> httpx.Response:
    """What botocore's own checks (and its serializer) would stop, sent as raw awsJson1.1."""
    return httpx.post(
        f"{emu.http_url}/",
        content=json.dumps(params),
        headers={
            "X-Amz-Target": f"AnyScaleFrontendService.{OPERATIONS[operation]}",
            "Content-Type": "application/x-amz-json-1.1",
        },
    )


@pytest.mark.parametrize("case", list(HOSTILE))
def test_what_the_model_or_the_service_refuses_is_refused_before_anything_is_stored(
    emu: Emulator, scaling, case: str
) -> None:
    scaling.register_scalable_target(**TARGET, MinCapacity=1, MaxCapacity=2)
    try:
        answer = send_unchecked(emu, *HOSTILE[case])
        assert (answer.status_code, answer.headers["x-amzn-errortype"]) == (
            400,
            EXPECTED.get(case, "ValidationException"),
        )
        assert answer.json()["message"]
        assert "\x1b" not in answer.json()["message"], "the error quotes the value escaped"
        assert scaling.describe_scaling_policies(**NAMESPACE)["ScalingPolicies"] == []
        assert "forged" not in format_status(status(emu))
    finally:
        scaling.deregister_scalable_target(**TARGET)


def test_a_garbage_next_token_is_the_services_invalid_token(scaling) -> None:
    for call in (scaling.describe_scalable_targets, scaling.describe_scaling_policies):
        assert error_code(call, **NAMESPACE, NextToken="garbage") == "InvalidNextTokenException"
