"""CloudWatch's routes: its operations under `POST /`, target prefix `GraniteServiceVersion20100801`,
what botocore sends with CloudWatch's JSON protocol (awsJson1.0: the same dispatch and `__type` errors as
awsJson1.1, emulator.wire.awsjson), and the control plane's operations with the data plane's.

Every request is checked against botocore's model of CloudWatch first (`SERVICE_MODEL`): a `Unit` of
5 used to be stored and then broke `python -m emulator metrics`. CloudWatch's JSON protocol is
"awsQueryCompatible": it answers the codes its query protocol always had, so what the model refuses is
a `ValidationError`, as the service answers an invalid statistic."""

from __future__ import annotations

from collections.abc import Mapping

from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.wire.awsjson import AsyncOperation, Operation
from emulator.wire.validation import ServiceModel

TARGET_PREFIX = "GraniteServiceVersion20100801"
SERVICE_MODEL = ServiceModel("cloudwatch", invalid_code="ValidationError")


def json_targets(control: CloudWatchControl) -> dict[str, Mapping[str, Operation | AsyncOperation]]:
    return {TARGET_PREFIX: {**control.metrics.operations(), **control.operations()}}
