"""CloudWatch's routes: its operations under `POST /`, target prefix `GraniteServiceVersion20100801`,
what botocore sends with CloudWatch's JSON protocol (awsJson1.0: the same dispatch and `__type` errors as
awsJson1.1, emulator.wire.awsjson), and the control plane's operations with the data plane's."""

from __future__ import annotations

from collections.abc import Mapping

from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.wire.awsjson import Operation

TARGET_PREFIX = "GraniteServiceVersion20100801"


def json_targets(control: CloudWatchControl) -> dict[str, Mapping[str, Operation]]:
    return {TARGET_PREFIX: {**control.metrics.operations(), **control.operations()}}
