"""Application Auto Scaling's requests checked: what names a scalable target (namespace, resource, dimension),
capacities, the policy types and their configurations, as the service constrains them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from emulator.services.autoscaling.errors import validation

NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
VARIANT_RESOURCE = re.compile(r"^endpoint/(?P<endpoint>[^/]+)/variant/(?P<variant>[^/]+)$")
POLICY_CONFIGURATION = {
    "TargetTrackingScaling": "TargetTrackingScalingPolicyConfiguration",
    "StepScaling": "StepScalingPolicyConfiguration",
}
MAX_CAPACITY = 1_000_000


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
