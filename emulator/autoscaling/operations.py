"""Application Auto Scaling (awsJson1.1, `X-Amz-Target: AnyScaleFrontendService.<Operation>`) for
SageMaker endpoint variants: recorded, validated, described and shown, never applied.

The emulator runs the instance count that an endpoint's config names and does not scale it. What a
deploy registers (a scalable target per variant, its target-tracking policy) is checked the way the
service checks it (the variant exists, min <= max, a policy needs its target), kept in the store and
shown by `python -m emulator status`, so that a rehearsed stack's autoscaling is seen and listed as
not applied instead of being dropped without a word.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from emulator.config import EmulatorConfig
from emulator.controller.store import ScalableTarget, ScalingPolicy, Store
from emulator.wire.awserrors import AwsError, validation
from emulator.wire.awsjson import Operation

TARGET_PREFIX = "AnyScaleFrontendService"
NAMESPACE = "sagemaker"
DIMENSION = "sagemaker:variant:DesiredInstanceCount"
VARIANT_RESOURCE = re.compile(r"^endpoint/(?P<endpoint>[^/]+)/variant/(?P<variant>[^/]+)$")
POLICY_CONFIGURATION = {
    "TargetTrackingScaling": "TargetTrackingScalingPolicyConfiguration",
    "StepScaling": "StepScalingPolicyConfiguration",
}
MAX_CAPACITY = 1_000_000


def not_found(message: str) -> AwsError:
    return AwsError("ObjectNotFoundException", message)


class AutoScaling:
    def __init__(self, config: EmulatorConfig, store: Store) -> None:
        self.config = config
        self.store = store

    def operations(self) -> dict[str, Operation]:
        return {
            name: getattr(self, name)
            for name in (
                "RegisterScalableTarget",
                "DescribeScalableTargets",
                "DeregisterScalableTarget",
                "PutScalingPolicy",
                "DescribeScalingPolicies",
                "DeleteScalingPolicy",
            )
        }

    # scalable targets ------------------------------------------------------------------------------

    def RegisterScalableTarget(self, body: dict[str, Any]) -> dict[str, Any]:
        key = self._key(body)
        endpoint, variant = VARIANT_RESOURCE.fullmatch(key[1]).groups()  # type: ignore[union-attr]
        ep = self.store.endpoints.get(endpoint)
        deployment = ep and (ep.current or ep.pending)
        if deployment is None:
            raise validation(f"Endpoint {endpoint} does not exist, or it has no endpoint config.")
        if variant not in deployment.variants:
            raise validation(f"The variant name(s) [{variant}] is/are not present in endpoint {endpoint}.")
        existing = self.store.scalable_targets.get(key)
        low = _capacity(body, "MinCapacity", existing.min_capacity if existing else None)
        high = _capacity(body, "MaxCapacity", existing.max_capacity if existing else None)
        if low is None or high is None:
            raise validation("MinCapacity and MaxCapacity are required to register a new scalable target.")
        if high < low:
            raise validation(f"Maximum capacity ({high}) cannot be less than minimum capacity ({low}).")
        if existing is not None:
            existing.min_capacity, existing.max_capacity = low, high
            target = existing
        else:
            target_arn = (
                f"arn:aws:application-autoscaling:{self.config.region}:{self.config.account_id}:"
                f"scalable-target/{secrets.token_hex(16)}"
            )
            target = ScalableTarget(*key, min_capacity=low, max_capacity=high, arn=target_arn)
            self.store.scalable_targets[key] = target
        self.store.events.add(
            "Normal", "ScalableTargetRecorded", endpoint, f"{variant}: {low}..{high} instances (not applied)"
        )
        return {"ScalableTargetARN": target.arn}

    def DescribeScalableTargets(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = _namespace(body)
        ids = _strings(body, "ResourceIds")
        dimension = body.get("ScalableDimension")
        return {
            "ScalableTargets": [
                self._describe_target(t)
                for t in self.store.scalable_targets.values()
                if t.namespace == namespace
                and (not ids or t.resource_id in ids)
                and dimension in (None, t.dimension)
            ]
        }

    def DeregisterScalableTarget(self, body: dict[str, Any]) -> dict[str, Any]:
        key = self._key(body)
        if self.store.scalable_targets.pop(key, None) is None:
            raise not_found(_no_target(key))
        self.store.events.add("Normal", "ScalableTargetDeregistered", key[1], key[2])
        return {}

    # scaling policies ------------------------------------------------------------------------------

    def PutScalingPolicy(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("PolicyName")
        if not isinstance(name, str) or not 1 <= len(name) <= 256:
            raise validation("PolicyName must be a string of 1 to 256 characters.")
        key = self._key(body)
        target = self.store.scalable_targets.get(key)
        if target is None:
            raise not_found(_no_target(key))
        policy_type = body.get("PolicyType", "StepScaling")
        member = POLICY_CONFIGURATION.get(policy_type) if isinstance(policy_type, str) else None
        if member is None:
            raise validation(
                f"PolicyType must be one of {sorted(POLICY_CONFIGURATION)}, got {policy_type!r}."
            )
        configuration = body.get(member)
        if not isinstance(configuration, dict):
            raise validation(f"{member} is required for a {policy_type} policy.")
        if policy_type == "TargetTrackingScaling" and not _is_number(configuration.get("TargetValue")):
            raise validation("TargetTrackingScalingPolicyConfiguration.TargetValue must be a number.")
        existing = target.policies.get(name)
        policy_arn = (
            existing.arn
            if existing
            else (
                f"arn:aws:autoscaling:{self.config.region}:{self.config.account_id}:scalingPolicy:"
                f"{uuid.uuid4()}:resource/{key[0]}/{key[1]}:policyName/{name}"
            )
        )
        target.policies[name] = ScalingPolicy(name, policy_arn, policy_type, configuration)
        self.store.events.add("Normal", "ScalingPolicyRecorded", key[1], f"{name} (not applied)")
        return {"PolicyARN": policy_arn, "Alarms": []}

    def DescribeScalingPolicies(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = _namespace(body)
        names = _strings(body, "PolicyNames")
        resource, dimension = body.get("ResourceId"), body.get("ScalableDimension")
        return {
            "ScalingPolicies": [
                self._describe_policy(t, p)
                for t in self.store.scalable_targets.values()
                if t.namespace == namespace
                and resource in (None, t.resource_id)
                and dimension in (None, t.dimension)
                for p in t.policies.values()
                if not names or p.name in names
            ]
        }

    def DeleteScalingPolicy(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("PolicyName")
        key = self._key(body)
        target = self.store.scalable_targets.get(key)
        if target is None or target.policies.pop(str(name), None) is None:
            raise not_found(
                f"No scaling policy found for service namespace: {key[0]}, resource ID: {key[1]}, "
                f"scalable dimension: {key[2]}, policy name: {name}"
            )
        return {}

    # shapes ----------------------------------------------------------------------------------------

    def _key(self, body: Mapping[str, Any]) -> tuple[str, str, str]:
        namespace = _namespace(body)
        resource, dimension = body.get("ResourceId"), body.get("ScalableDimension")
        if not isinstance(resource, str) or not VARIANT_RESOURCE.fullmatch(resource):
            raise validation(
                f"Unsupported resource ID {resource!r}: the emulator scales SageMaker endpoint variants, "
                "endpoint/<endpoint name>/variant/<variant name>."
            )
        if dimension != DIMENSION:
            raise validation(
                f"Unsupported scalable dimension {dimension!r}; the emulator records {DIMENSION}."
            )
        return namespace, resource, dimension

    def _describe_target(self, t: ScalableTarget) -> dict[str, Any]:
        return {
            "ServiceNamespace": t.namespace,
            "ResourceId": t.resource_id,
            "ScalableDimension": t.dimension,
            "MinCapacity": t.min_capacity,
            "MaxCapacity": t.max_capacity,
            # No RoleARN was given: the service uses its SageMaker service-linked role.
            "RoleARN": (
                f"arn:aws:iam::{self.config.account_id}:role/aws-service-role/sagemaker.application-"
                "autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
            ),
            "CreationTime": t.created,
            "ScalableTargetARN": t.arn,
            "SuspendedState": {
                "DynamicScalingInSuspended": False,
                "DynamicScalingOutSuspended": False,
                "ScheduledScalingSuspended": False,
            },
        }

    def _describe_policy(self, t: ScalableTarget, p: ScalingPolicy) -> dict[str, Any]:
        return {
            "PolicyARN": p.arn,
            "PolicyName": p.name,
            "ServiceNamespace": t.namespace,
            "ResourceId": t.resource_id,
            "ScalableDimension": t.dimension,
            "PolicyType": p.policy_type,
            POLICY_CONFIGURATION[p.policy_type]: p.configuration,
            "Alarms": [],
            "CreationTime": p.created,
        }


def _namespace(body: Mapping[str, Any]) -> str:
    namespace = body.get("ServiceNamespace")
    if namespace != NAMESPACE:
        raise validation(f"Unsupported service namespace {namespace!r}; the emulator records {NAMESPACE!r}.")
    return namespace


def _capacity(body: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = body.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CAPACITY:
        raise validation(f"{name} must be a whole number from 0 to {MAX_CAPACITY}, got {value!r}.")
    return value


def _strings(body: Mapping[str, Any], name: str) -> list[str]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise validation(f"{name} must be a list of strings.")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _no_target(key: tuple[str, str, str]) -> str:
    return (
        f"No scalable target registered for service namespace: {key[0]}, resource ID: {key[1]}, "
        f"scalable dimension: {key[2]}"
    )
