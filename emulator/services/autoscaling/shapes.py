"""Application Auto Scaling's requests checked: what names a scalable target (namespace, resource, dimension),
capacities, the policy types and their configurations, as the service constrains them.

Types, required members, lengths, patterns and enums are botocore's model's, checked for every awsJson
request in the wire (emulator.wire.validation); here are the rules the service applies beyond its model,
as its API reference states them: MaxResults' ranges, a step scaling configuration's required parts,
a target a SageMaker variant's metric can reach, CloudWatch's limits on a custom metric, and paging
tokens (the emulator answers every list in one page, so no token it could be given is one it issued)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from emulator.services.autoscaling.errors import invalid_next_token, validation

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
VARIANT_RESOURCE = re.compile(r"^endpoint/(?P<endpoint>[^/]+)/variant/(?P<variant>[^/]+)$")
POLICY_CONFIGURATION = {
    "TargetTrackingScaling": "TargetTrackingScalingPolicyConfiguration",
    "StepScaling": "StepScalingPolicyConfiguration",
}
MAX_CAPACITY = 1_000_000
MAX_RESULTS = {"DescribeScalableTargets": 50, "DescribeScalingPolicies": 10}
"""The API reference: "This value can be between 1 and 50" (targets), "between 1 and 10" (policies)."""
MAX_TARGET_VALUE = 2.0**360
"""TargetValue: "Values must be in the range of -2^360 to 2^360", and a valid number for its metric:
SageMaker's (invocations, concurrency, utilization per instance) are never negative, so a target of 0
or less is one the policy could never track."""
METRIC_NAME_MAX = 255
"""CloudWatch's limits on what names a metric (its MetricName, Namespace and Dimension names: 1 to
255 characters; a dimension value 1 to 1024; at most 30 dimensions)."""
DIMENSION_VALUE_MAX = 1024
MAX_DIMENSIONS = 30


def target_key(body: Mapping[str, Any]) -> tuple[str, str, str]:
    namespace = service_namespace(body)
    resource, dimension = body.get("ResourceId"), body.get("ScalableDimension")
    if not isinstance(resource, str) or not VARIANT_RESOURCE.fullmatch(resource):
        raise validation(
            f"Unsupported resource ID {resource!r}: the emulator scales SageMaker endpoint variants, "
            "endpoint/<endpoint name>/variant/<variant name>."
        )
    if dimension != DIMENSION:
        raise validation(f"Unsupported scalable dimension {dimension!r}; the emulator records {DIMENSION}.")
    return namespace, resource, dimension


def service_namespace(body: Mapping[str, Any]) -> str:
    namespace = body.get("ServiceNamespace")
    if namespace != NAMESPACE:
        raise validation(f"Unsupported service namespace {namespace!r}; the emulator records {NAMESPACE!r}.")
    return namespace


def capacity(body: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CAPACITY:
        raise validation(f"{name} must be a whole number from 0 to {MAX_CAPACITY}, got {value!r}.")
    return value


def strings(body: Mapping[str, Any], name: str) -> list[str]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise validation(f"{name} must be a list of strings.")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def paging(operation: str, body: Mapping[str, Any]) -> None:
    """MaxResults in its range; a NextToken is never one the emulator issued (one page answers all)."""
    limit = body.get("MaxResults")
    if limit is not None and not (is_number(limit) and 1 <= limit <= MAX_RESULTS[operation]):
        raise validation(
            f"1 validation error detected: Value '{limit}' at 'maxResults' failed to satisfy constraint: "
            f"Member must have value between 1 and {MAX_RESULTS[operation]}"
        )
    if body.get("NextToken") is not None:
        raise invalid_next_token()


def policy_configuration(policy_type: str, configuration: Mapping[str, Any]) -> None:
    """What the service requires of a policy's configuration beyond the model's types (a manifest's
    or a template's configuration reaches here unchecked by the wire, hence the type checks)."""
    if policy_type == "StepScaling":
        if not configuration.get("AdjustmentType"):
            raise validation("AdjustmentType is required for a new step scaling policy configuration.")
        if not configuration.get("StepAdjustments"):
            raise validation("At least one step adjustment is required for a step scaling policy.")
        return
    target = configuration.get("TargetValue")
    if not is_number(target) or not 0 < target <= MAX_TARGET_VALUE:
        raise validation(
            f"TargetValue must be greater than 0 and at most 2^360 for a SageMaker variant's metric, "
            f"got {target!r}."
        )
    predefined = configuration.get("PredefinedMetricSpecification")
    if predefined is not None and not isinstance(predefined, Mapping):
        raise validation("PredefinedMetricSpecification must be an object.")
    custom = configuration.get("CustomizedMetricSpecification")
    if custom is not None:
        _metric_names(custom)


def _metric_names(custom: Any) -> None:
    if not isinstance(custom, Mapping):
        raise validation("A customized metric specification must be an object.")
    for name in ("MetricName", "Namespace"):
        value = custom.get(name)
        if value is not None and not (isinstance(value, str) and 1 <= len(value) <= METRIC_NAME_MAX):
            raise validation(f"A metric's {name} must be a string of 1 to {METRIC_NAME_MAX} characters.")
    dimensions = custom.get("Dimensions") or []
    if not isinstance(dimensions, list) or len(dimensions) > MAX_DIMENSIONS:
        raise validation(f"A metric's Dimensions are a list of at most {MAX_DIMENSIONS}.")
    for dimension in dimensions:
        name, value = (
            dimension.get(k) if isinstance(dimension, Mapping) else None for k in ("Name", "Value")
        )
        if not (isinstance(name, str) and 1 <= len(name) <= METRIC_NAME_MAX) or not (
            isinstance(value, str) and 1 <= len(value) <= DIMENSION_VALUE_MAX
        ):
            raise validation(
                f"A dimension's name has 1 to {METRIC_NAME_MAX} characters and its value 1 to "
                f"{DIMENSION_VALUE_MAX}."
            )
    queries = custom.get("Metrics") or []
    for query in queries if isinstance(queries, list) else []:
        stat = query.get("MetricStat") if isinstance(query, Mapping) else None
        if isinstance(stat, Mapping) and stat.get("Metric") is not None:
            _metric_names(stat["Metric"])
