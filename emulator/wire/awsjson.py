"""The awsJson1.1 protocol, written once for every emulated service that speaks it (SageMaker's control
plane, Application Auto Scaling): `POST /` with the operation in `X-Amz-Target: <prefix>.<Operation>`,
a JSON object in and out, errors with `__type` (emulator.wire.awserrors.json_protocol_error).

A service is its operations as plain methods (dict in, dict out), so that the YAML manifests and the
tests go through exactly the code boto3 reaches. Every request is checked against the service's
botocore model first (emulator.wire.validation), so an operation sees only what AWS lets through."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from quart import Blueprint, Response, request

from emulator.wire.awserrors import AwsError, json_protocol_error, render_errors, request_id
from emulator.wire.validation import RequestValidator, ServiceModel

Operation = Callable[[dict[str, Any]], dict[str, Any]]


def aws_json_blueprint(
    services: Mapping[str, Mapping[str, Operation]],
    models: Mapping[str, ServiceModel | str] | None = None,
) -> Blueprint:
    """`POST /` for every service in `services` (target prefix -> operation name -> operation), each
    request checked against the botocore model `models` names for its prefix (`SageMaker` ->
    `sagemaker`)."""
    bp = Blueprint("aws_json", __name__)
    validator = RequestValidator(models or {})
    render_errors(bp, json_protocol_error)

    @bp.post("/")
    async def dispatch() -> Response:
        raw = await request.get_data()
        try:
            prefix, _, operation = request.headers.get("X-Amz-Target", "").partition(".")
            handler = services.get(prefix, {}).get(operation)
            if handler is None:
                raise AwsError(
                    "UnknownOperationException", f"operation {operation or '(none)'} is not emulated"
                )
            try:
                body = json.loads(raw or b"{}")
            except (ValueError, RecursionError) as exc:  # not JSON, a huge integer, deep nesting
                raise AwsError("SerializationException", f"request body is not JSON: {exc}") from exc
            if not isinstance(body, dict):
                raise AwsError("SerializationException", "request body must be a JSON object")
            validator.check(prefix, operation, body)
            result = handler(body)
        except AwsError as err:
            return json_protocol_error(err)
        return Response(
            json.dumps(result),
            content_type="application/x-amz-json-1.1",
            headers={"x-amzn-RequestId": request_id()},
        )

    return bp
