"""Application Auto Scaling's routes: its operations under awsJson1.1's `POST /`, target prefix
`AnyScaleFrontendService` (errors in awsJson1.1's `__type` envelope)."""

from __future__ import annotations

from collections.abc import Mapping

from emulator.services.autoscaling.control import AutoScalingControl
from emulator.wire.awsjson import Operation
from emulator.wire.validation import ServiceModel

TARGET_PREFIX = "AnyScaleFrontendService"
SERVICE_MODEL = ServiceModel("application-autoscaling")


def json_targets(control: AutoScalingControl) -> dict[str, Mapping[str, Operation]]:
    return {TARGET_PREFIX: control.operations()}
