"""The awsJson1.1 protocol, written once for every emulated service that speaks it (SageMaker's control
plane, Application Auto Scaling): `POST /` with the operation in `X-Amz-Target: <prefix>.<Operation>`,
a JSON object in and out, errors with `__type` (emulator.wire.awserrors.json_protocol_error).

A service is its operations as plain methods (dict in, dict out), so that the YAML manifests and the
tests go through exactly the code boto3 reaches. Every request is checked against the service's
botocore model first (emulator.wire.validation), so an operation sees only what AWS lets through."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from quart import Blueprint, Response, request

from emulator.wire.awserrors import AwsError, json_protocol_error, render_errors, request_id
from emulator.wire.bodies import inflate
from emulator.wire.validation import RequestValidator, ServiceModel

logger = logging.getLogger("emulator.wire.awsjson")

Operation = Callable[[dict[str, Any]], dict[str, Any]]
AsyncOperation = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""An operation that awaits (CloudWatch's reads, which reduce large ranges on a worker thread)."""


def aws_json_blueprint(
    services: Mapping[str, Mapping[str, Operation | AsyncOperation]],
    models: Mapping[str, ServiceModel | str] | None = None,
) -> Blueprint:
    """`POST /` for every service in `services` (target prefix -> operation name -> operation), each
    request checked against the botocore model `models` names for its prefix (`SageMaker` ->
    `sagemaker`). A body botocore compressed (`Content-Encoding: gzip`: PutMetricData's over 10 KB)
    is inflated first, bounded (emulator.wire.bodies.inflate)."""
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
            body = _json_object(inflate(raw, request.headers.get("Content-Encoding", "")))
            validator.check(prefix, operation, body)
            result = handler(body)
            if inspect.isawaitable(result):
                result = await result
        except AwsError as err:
            return json_protocol_error(err)
        try:
            text = json.dumps(result, allow_nan=False)
        except ValueError as exc:  # an answer holding NaN or an infinity, which JSON has no words for
            logger.error("%s.%s answered a number JSON cannot carry: %s", prefix, operation, exc)
            return json_protocol_error(
                AwsError("InternalServerException", f"the answer held a number JSON cannot carry: {exc}", 500)
            )
        return Response(
            text, content_type="application/x-amz-json-1.1", headers={"x-amzn-RequestId": request_id()}
        )

    return bp


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:  # not JSON, a huge integer, deep nesting
        raise AwsError("SerializationException", f"request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise AwsError("SerializationException", "request body must be a JSON object")
    return body
