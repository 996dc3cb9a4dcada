"""CloudFormation's routes: awsQuery under `/cloudformation/` (boto3 keeps the path of
`AWS_ENDPOINT_URL_CLOUDFORMATION`; `POST /` is awsJson1.1's)."""

from __future__ import annotations

from quart import Blueprint

from emulator.services.cloudformation.control import CloudFormationControl
from emulator.services.cloudformation.errors import NAMESPACE
from emulator.wire.awsquery import aws_query_blueprint

PATH = "/cloudformation/"


def blueprints(control: CloudFormationControl) -> list[Blueprint]:
    return [aws_query_blueprint("CloudFormation", PATH, NAMESPACE, control.operations(), "cloudformation")]
