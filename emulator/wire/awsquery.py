"""The awsQuery protocol, written once for every emulated service that speaks it (STS, CloudFormation):
a form-encoded `POST` with the operation in `Action`, an XML answer `<{Action}Response><{Action}Result>`
with the result's members as elements (lists as `<member>` elements), errors as an XML `ErrorResponse`
(emulator.wire.awserrors.query_error).

A service is its operations as plain methods (dict in, dict out), as for awsJson1.1: the form's
flattened members (`Tags.member.1.Key=...`) arrive as the nested dicts and lists botocore flattened,
and the dict an operation returns is written as the XML botocore parses back into the same shape.
Each service is served under its own path (`/sts/`, `/cloudformation/`; boto3 keeps the path of
`AWS_ENDPOINT_URL_<SERVICE>`), because `POST /` is awsJson1.1's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, Response, request

from emulator.wire.awserrors import AwsError, query_error, render_errors, request_id, xml_text
from emulator.wire.awsjson import Operation


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
    name: str, path: str, namespace: str, operations: Mapping[str, Operation]
) -> Blueprint:
    """`POST path` for one service: `Action` -> operation, its result in the service's XML envelope."""
    bp = Blueprint(name, __name__)
    render_errors(bp, lambda err: query_error(err, namespace))

    @bp.post(path)
    async def dispatch() -> Response:
        params = unflatten(await request.form)
        action = str(params.pop("Action", ""))
        params.pop("Version", None)
        handler = operations.get(action)
        try:
            if handler is None:
                raise AwsError("InvalidAction", f"{name} action {action or '(none)'} is not emulated")
            result = handler(params)
        except AwsError as err:
            return query_error(err, namespace)
        body = (
            f'<{action}Response xmlns="{namespace}"><{action}Result>{to_xml(result)}</{action}Result>'
            f"<ResponseMetadata><RequestId>{request_id()}</RequestId></ResponseMetadata></{action}Response>"
        )
        return Response(body, content_type="text/xml")

    return bp
