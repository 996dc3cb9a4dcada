"""Requests checked against botocore's models (emulator/wire/validation.py), for every awsJson1.1 and
awsQuery service."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.wire.awserrors import AwsError
from emulator.wire.validation import RequestValidator, ServiceModel, compiled_pattern, service_model

VALIDATOR = RequestValidator(
    {
        "AnyScaleFrontendService": "application-autoscaling",
        "SageMaker": ServiceModel("sagemaker", widened={"Url": r"file://.+"}),
    }
)
TARGET = {
    "ServiceNamespace": "sagemaker",
    "ResourceId": "endpoint/e/variant/v",
    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
}


def refusal(prefix: str, operation: str, body: dict[str, Any]) -> AwsError:
    with pytest.raises(AwsError) as caught:
        VALIDATOR.check(prefix, operation, body)
    return caught.value


def test_what_the_model_allows_passes() -> None:
    VALIDATOR.check("AnyScaleFrontendService", "PutScalingPolicy", {**TARGET, "PolicyName": "p ~!"})
    VALIDATOR.check("SageMaker", "ListEndpoints", {"MaxResults": 100, "Unmodelled": {"ignored": True}})
    VALIDATOR.check("Unknown", "Anything", {"x": object()})


def test_a_wrong_type_is_a_serialization_exception_naming_the_member() -> None:
    error = refusal("AnyScaleFrontendService", "DescribeScalingPolicies", {**TARGET, "ResourceId": {"a": 1}})
    assert (error.code, error.status) == ("SerializationException", 400)
    assert "'resourceId'" in error.message
    for body in ({"MaxResults": True}, {"MaxResults": 1.5}, {"NameContains": 5}):
        assert refusal("SageMaker", "ListEndpoints", body).code == "SerializationException"


def test_constraints_are_reported_as_aws_words_them() -> None:
    error = refusal("AnyScaleFrontendService", "PutScalingPolicy", {**TARGET, "PolicyName": "\x1b[2J"})
    assert error.code == "ValidationException"
    assert error.message == (
        "1 validation error detected: Value '\\x1b[2J' at 'policyName' failed to satisfy constraint: "
        "Member must satisfy regular expression pattern: \\p{Print}+"
    )
    error = refusal("SageMaker", "ListEndpoints", {"MaxResults": 0, "SortBy": "Size"})
    assert error.message.startswith("2 validation errors detected: ")
    assert (
        "at 'maxResults' failed to satisfy constraint: Member must have value greater than or equal to 1"
        in (error.message)
    )
    assert "Member must satisfy enum value set: [Name, CreationTime, Status]" in error.message
    missing = refusal("AnyScaleFrontendService", "PutScalingPolicy", TARGET)
    assert (
        "Value null at 'policyName' failed to satisfy constraint: Member must not be null" in missing.message
    )


def test_nested_members_lists_and_lengths_are_checked() -> None:
    body = {
        **TARGET,
        "PolicyName": "p",
        "StepScalingPolicyConfiguration": {"StepAdjustments": [{"ScalingAdjustment": 1}, {}]},
    }
    error = refusal("AnyScaleFrontendService", "PutScalingPolicy", body)
    assert "'stepScalingPolicyConfiguration.stepAdjustments.2.member.scalingAdjustment'" in error.message
    long_name = refusal("SageMaker", "DescribeEndpoint", {"EndpointName": "a" * 64})
    assert "Member must have length less than or equal to 63" in long_name.message
    assert "(64 characters)" not in long_name.message and "..." not in long_name.message
    huge = refusal("SageMaker", "DescribeEndpoint", {"EndpointName": "a" * 5000})
    assert "... (5000 characters)" in huge.message and len(huge.message) < 400


def test_numbers_that_are_not_finite_are_refused() -> None:
    body = {
        **TARGET,
        "PolicyName": "p",
        "TargetTrackingScalingPolicyConfiguration": {"TargetValue": float("nan")},
    }
    assert "finite" in refusal("AnyScaleFrontendService", "PutScalingPolicy", body).message


def test_a_service_widens_only_the_shapes_it_names() -> None:
    container = {"Image": "echo:1", "ModelDataUrl": "file:///models/m.tar.gz"}
    VALIDATOR.check("SageMaker", "CreateModel", {"ModelName": "m", "PrimaryContainer": container})
    container["ModelDataUrl"] = "ftp://host/m.tar.gz"
    error = refusal("SageMaker", "CreateModel", {"ModelName": "m", "PrimaryContainer": container})
    assert "'primaryContainer.modelDataUrl'" in error.message


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        (r"\p{Print}+", "plain ASCII ~", True),
        (r"\p{Print}+", "caf\u00e9", False),  # Java's \p{Print} is ASCII
        (r"[\p{Print}\n]+", "two\nlines", True),
        (r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\r\n\t]*", "emoji \U0001f600", True),
        (r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\r\n\t]*", "nul \x00", False),
        (r"[\p{L}\p{Z}\p{N}_.:/=+\-@]*", "Grüße 42", True),
    ],
)
def test_java_patterns_read_as_java_reads_them(pattern: str, value: str, matches: bool) -> None:
    compiled = compiled_pattern(pattern)
    assert compiled is not None
    assert (compiled.fullmatch(value) is not None) == matches


@pytest.mark.parametrize(
    "service", ["sagemaker", "application-autoscaling", "cloudwatch", "cloudformation", "sts"]
)
def test_every_pattern_of_the_served_models_compiles(service: str) -> None:
    model = service_model(service)
    patterns = {
        model.shape_for(name).metadata["pattern"]
        for name in model.shape_names
        if "pattern" in model.shape_for(name).metadata
    }
    assert patterns and not [p for p in patterns if compiled_pattern(p) is None]


JSON_CLOUDWATCH = RequestValidator({"Granite": ServiceModel("cloudwatch", invalid_code="ValidationError")})
QUERY = RequestValidator(
    {
        "CloudFormation": ServiceModel(
            "cloudformation", invalid_code="ValidationError", type_code="ValidationError"
        )
    },
    query=True,
)
ALARM = {"AlarmName": "a", "EvaluationPeriods": 1, "ComparisonOperator": "GreaterThanThreshold"}


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("EvaluationPeriods", 2**31),  # integer: 32 bits
        ("EvaluationPeriods", 10**400),
        ("Threshold", 10**400),  # a double holds no 400-digit number
        ("Period", -(2**31) - 1),
    ],
)
def test_a_json_number_its_model_type_cannot_hold_is_a_wrong_type(member: str, value: int) -> None:
    """A 400-digit EvaluationPeriods reached the operation, whose float() raised OverflowError: a 500."""
    with pytest.raises(AwsError) as caught:
        JSON_CLOUDWATCH.check("Granite", "PutMetricAlarm", {**ALARM, member: value})
    assert caught.value.code == "SerializationException" and "cannot hold it" in caught.value.message


def test_cloudwatch_answers_what_its_model_refuses_with_its_query_code() -> None:
    datum = {"MetricName": "m", "Value": 1, "Unit": "Parsecs"}
    with pytest.raises(AwsError) as caught:
        JSON_CLOUDWATCH.check("Granite", "PutMetricData", {"Namespace": "N", "MetricData": [datum]})
    assert caught.value.code == "ValidationError" and "'metricData.1.member.unit'" in caught.value.message
    JSON_CLOUDWATCH.check(
        "Granite", "PutMetricAlarm", {**ALARM, "EvaluationPeriods": 2**31 - 1, "Threshold": 1e308}
    )


STACK = {"StackName": "s", "TemplateBody": "{}"}


def test_a_query_form_that_reads_as_the_model_passes() -> None:
    QUERY.check(
        "CloudFormation",
        "CreateStack",
        {
            **STACK,
            "TimeoutInMinutes": "10",
            "DisableRollback": "true",
            "Parameters": [{"ParameterKey": "A", "ParameterValue": "1"}],
            "Tags": "",  # `Tags=`: an empty list
            "Capabilities": ["CAPABILITY_IAM"],
            "Unmodelled": {"deep": {"er": "ignored"}},
        },
    )


@pytest.mark.parametrize(
    ("member", "value", "words"),
    [
        ("Parameters", "x", "can not be converted to list"),
        ("Parameters", ["x"], "can not be converted to structure"),
        ("Tags", [{"Key": {"a": "1"}, "Value": "v"}], "can not be converted to string"),
        ("TimeoutInMinutes", "ten", "can not be converted to integer"),
        ("TimeoutInMinutes", "9" * 400, "can not be converted to integer"),
        ("TimeoutInMinutes", "2147483648", "can not be converted to integer"),
        ("DisableRollback", "maybe", "can not be converted to boolean"),
        ("TimeoutInMinutes", "0", "greater than or equal to 1"),
        ("OnFailure", "EXPLODE", "enum value set"),
        ("Tags", [{"Key": "k"}], "must not be null"),
        ("Tags", [{"Key": "k", "Value": "v"}] * 51, "length less than or equal to 50"),
    ],
)
def test_a_query_form_is_read_as_the_models_types_and_refused_as_validation_error(
    member: str, value: object, words: str
) -> None:
    with pytest.raises(AwsError) as caught:
        QUERY.check("CloudFormation", "CreateStack", {**STACK, member: value})
    assert (caught.value.code, caught.value.status) == ("ValidationError", 400)
    assert words in caught.value.message
