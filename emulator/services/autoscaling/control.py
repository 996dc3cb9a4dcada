"""Application Auto Scaling's operations for SageMaker endpoint variants: recorded, validated, described
and shown, never applied (awsJson1.1, `X-Amz-Target: AnyScaleFrontendService.<Operation>`, routes.py).

The emulator runs the instance count that an endpoint's config names and does not scale it. What a
deploy registers (a scalable target per variant, its target-tracking policy) is checked the way the
service checks it (the variant exists, min <= max, a policy needs its target), kept in the store and
shown by `python -m emulator status`, so that a rehearsed stack's autoscaling is seen and listed as
not applied instead of being dropped without a word.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from emulator.config import EmulatorConfig
from emulator.controller.store import ScalableTarget, ScalingPolicy, Store
from emulator.services.autoscaling.errors import no_target, not_found, validation
from emulator.services.autoscaling.shapes import (
    POLICY_CONFIGURATION,
    VARIANT_RESOURCE,
    capacity,
    paging,
    policy_configuration,
    service_namespace,
    strings,
    target_key,
)
from emulator.wire.awsjson import Operation


class AutoScalingControl:
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
        key = target_key(body)
        endpoint, variant = VARIANT_RESOURCE.fullmatch(key[1]).groups()  # type: ignore[union-attr]
        ep = self.store.endpoints.get(endpoint)
        deployment = ep and (ep.current or ep.pending)
        if deployment is None:
            raise validation(f"Endpoint {endpoint} does not exist, or it has no endpoint config.")
        if variant not in deployment.variants:
            raise validation(f"The variant name(s) [{variant}] is/are not present in endpoint {endpoint}.")
        existing = self.store.scalable_targets.get(key)
        low = capacity(body, "MinCapacity", existing.min_capacity if existing else None)
        high = capacity(body, "MaxCapacity", existing.max_capacity if existing else None)
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
        namespace = service_namespace(body)
        paging("DescribeScalableTargets", body)
        ids = strings(body, "ResourceIds")
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
        key = target_key(body)
        if self.store.scalable_targets.pop(key, None) is None:
            raise not_found(no_target(key))
        self.store.events.add("Normal", "ScalableTargetDeregistered", key[1], key[2])
        return {}

    # scaling policies ------------------------------------------------------------------------------

    def PutScalingPolicy(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("PolicyName")
        if not isinstance(name, str) or not 1 <= len(name) <= 256:
            raise validation("PolicyName must be a string of 1 to 256 characters.")
        key = target_key(body)
        target = self.store.scalable_targets.get(key)
        if target is None:
            raise not_found(no_target(key))
        policy_type = body.get("PolicyType", "StepScaling")
        member = POLICY_CONFIGURATION.get(policy_type) if isinstance(policy_type, str) else None
        if member is None:
            raise validation(
                f"PolicyType must be one of {sorted(POLICY_CONFIGURATION)}, got {policy_type!r}."
            )
        configuration = body.get(member)
        if not isinstance(configuration, dict):
            raise validation(f"{member} is required for a {policy_type} policy.")
        policy_configuration(policy_type, configuration)
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
        namespace = service_namespace(body)
        paging("DescribeScalingPolicies", body)
        names = strings(body, "PolicyNames")
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
        key = target_key(body)
        target = self.store.scalable_targets.get(key)
        if target is None or target.policies.pop(str(name), None) is None:
            raise not_found(
                f"No scaling policy found for service namespace: {key[0]}, resource ID: {key[1]}, "
                f"scalable dimension: {key[2]}, policy name: {name}"
            )
        return {}

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
