"""STS's routes: awsQuery under `/sts/` (boto3 keeps the path of `AWS_ENDPOINT_URL_STS`; `POST /` is
awsJson1.1's)."""

from __future__ import annotations

from quart import Blueprint

from emulator.services.sts.control import StsControl
from emulator.services.sts.errors import NAMESPACE
from emulator.wire.awsquery import aws_query_blueprint

PATH = "/sts/"


def blueprints(control: StsControl) -> list[Blueprint]:
    return [aws_query_blueprint("STS", PATH, NAMESPACE, control.operations(), "sts")]
