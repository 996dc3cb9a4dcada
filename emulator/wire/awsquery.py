"""The awsQuery protocol, written once for every emulated service that speaks it (STS, CloudFormation):
a form-encoded `POST` with the operation in `Action`, an XML answer `<{Action}Response><{Action}Result>`
with the result's members as elements (lists as `<member>` elements), errors as an XML `ErrorResponse`
(emulator.wire.awserrors.query_error).

A service is its operations as plain methods (dict in, dict out), as for awsJson1.1: the form's
flattened members (`Tags.member.1.Key=...`) arrive as the nested dicts and lists botocore flattened,
and the dict an operation returns is written as the XML botocore parses back into the same shape.
Each service is served under its own path (`/sts/`, `/cloudformation/`; boto3 keeps the path of
`AWS_ENDPOINT_URL_<SERVICE>`), because `POST /` is awsJson1.1's.

Every request is checked against the service's botocore model before its operation runs
(emulator.wire.validation, reading the form's strings as the model's types), so an operation sees only
what AWS lets through: `Parameters=x` or `Tags.member.1.Key.a=1` used to reach CreateStack, whose
AttributeError was a 500 in JSON, which boto3 cannot parse from a query service. Every error, an
unexpected one included (`InternalFailure`, 500), is answered in the service's XML envelope.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from quart import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from emulator.wire.awserrors import AwsError, query_error, render_errors, request_id, xml_text
from emulator.wire.awsjson import Operation
from emulator.wire.validation import RequestValidator, ServiceModel

logger = logging.getLogger("emulator.wire.awsquery")


def unflatten(form: Mapping[str, str]) -> dict[str, Any]:
    """awsQuery's flattened members back into nested dicts; `X.member.N` is the N-th item of list X."""
    tree: dict[str, Any] = {}
    for key, value in form.items():
        node = tree
        *path, last = key.split(".")
        for part in path:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):  # `X=` (an empty list) and `X.member.1=...` both given
                child = node[part] = {}
            node = child
        node.setdefault(last, value)
    return _lists(tree)


def _lists(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if set(value) == {"member"} and isinstance(value["member"], dict):
        items = value["member"]
        ordered = sorted(items, key=lambda index: int(index) if index.isdigit() else 0)
        return [_lists(items[index]) for index in ordered]
    return {key: _lists(item) for key, item in value.items()}


def to_xml(value: Any) -> str:
    """A result's members as awsQuery XML: a dict's keys as elements, a list's items as `<member>`."""
    if isinstance(value, Mapping):
        return "".join(f"<{key}>{to_xml(item)}</{key}>" for key, item in value.items() if item is not None)
    if isinstance(value, list | tuple):
        return "".join(f"<member>{to_xml(item)}</member>" for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return xml_text(str(value))


def aws_query_blueprint(
    name: str, path: str, namespace: str, operations: Mapping[str, Operation], model: str
) -> Blueprint:
    """`POST path` for one service: `Action` -> operation, checked against botocore's `model` (boto3's
    name of the service), its result in the service's XML envelope."""
    bp = Blueprint(name, __name__)

    def render(err: AwsError) -> Response:
        return query_error(err, namespace)

    render_errors(bp, render)
    query_codes = ServiceModel(model, invalid_code="ValidationError", type_code="ValidationError")
    validator = RequestValidator({name: query_codes}, query=True)

    async def unexpected(err: Exception) -> Response:
        if isinstance(err, HTTPException):  # what the form's reader refused
            return render(AwsError(type(err).__name__, err.description or str(err), err.code or 400))
        logger.exception("unexpected failure serving %s %s", request.method, request.path, exc_info=err)
        return render(AwsError("InternalFailure", f"internal error: {err!r}", 500))

    bp.register_error_handler(Exception, unexpected)

    @bp.post(path)
    async def dispatch() -> Response:
        form = await request.form
        try:
            try:
                params = unflatten(form)
            except RecursionError as exc:
                raise AwsError("MalformedQueryString", "a parameter's name nests too deep") from exc
            action = str(params.pop("Action", ""))
            params.pop("Version", None)
            handler = operations.get(action)
            if handler is None:
                raise AwsError("InvalidAction", f"{name} action {action or '(none)'} is not emulated")
            validator.check(name, action, params)
            result = handler(params)
        except AwsError as err:
            return render(err)
        body = (
            f'<{action}Response xmlns="{namespace}"><{action}Result>{to_xml(result)}</{action}Result>'
            f"<ResponseMetadata><RequestId>{request_id()}</RequestId></ResponseMetadata></{action}Response>"
        )
        return Response(body, content_type="text/xml")

    return bp
