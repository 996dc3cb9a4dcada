"""AWS errors as the official clients parse them.

One exception type carries the error code, HTTP status, message and any extra modeled members; each
service's routes turn it into the response shape their protocol uses (sagemaker-runtime.md §2.1, §2.4,
§4): awsJson1.1 puts `__type` in the body, restJson1 puts the code in `x-amzn-ErrorType`, awsQuery
(STS, CloudFormation) answers an XML `ErrorResponse`. A service's routes name their envelope once with
`render_errors(blueprint, ...)`; every AwsError raised while serving one of them (the SigV4 check
included) is answered in it. The services' own codes and messages are in their `errors.py`.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any
from xml.sax.saxutils import escape

from quart import Blueprint, Response

# XML 1.0 allows no control character but tab, LF and CR, not even as a character reference: a build
# log's ANSI colour (`\x1b[91m`) in a stack event's reason made botocore refuse the whole
# DescribeStackEvents answer ("not well-formed (invalid token)"). Such a character is written as the
# text of its Python escape, so the reason still reads whole.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: str) -> str:
    """`value` as XML character data: `&`, `<`, `>` escaped, characters XML cannot carry spelled out."""
    spelled = _NOT_XML.sub(lambda c: c.group().encode("unicode_escape", "backslashreplace").decode(), value)
    return escape(spelled)


class AwsError(Exception):
    def __init__(self, code: str, message: str, status: int = 400, **members: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.members = members


def request_id() -> str:
    return str(uuid.uuid4())


def json_protocol_error(err: AwsError) -> Response:
    """awsJson1.1 (the SageMaker control plane)."""
    body = {"__type": err.code, "message": err.message, **err.members}
    return Response(
        json.dumps(body, allow_nan=False),
        status=err.status,
        content_type="application/x-amz-json-1.1",
        headers={"x-amzn-RequestId": request_id(), "x-amzn-ErrorType": err.code},
    )


def rest_json_error(err: AwsError, message_member: str = "Message") -> Response:
    """restJson1 (the runtimes, Bedrock, AgentCore): code in the header, members in the body.

    SageMaker names the message `Message`, Bedrock `message` (botocore reads either)."""
    body = {message_member: err.message, **err.members}
    return Response(
        json.dumps(body, allow_nan=False),
        status=err.status,
        content_type="application/json",
        headers={"x-amzn-RequestId": request_id(), "x-amzn-ErrorType": err.code},
    )


def query_error(err: AwsError, namespace: str) -> Response:
    """awsQuery (STS, CloudFormation): an XML error document."""
    body = (
        f'<ErrorResponse xmlns="{namespace}"><Error><Type>Sender</Type><Code>{xml_text(err.code)}</Code>'
        f"<Message>{xml_text(err.message)}</Message></Error><RequestId>{request_id()}</RequestId></ErrorResponse>"
    )
    return Response(body, status=err.status, content_type="text/xml")


def render_errors(blueprint: Blueprint, render: Callable[[AwsError], Response]) -> None:
    """Answer every AwsError raised while serving `blueprint`'s routes with `render`."""

    async def handle(err: AwsError) -> Response:
        return render(err)

    blueprint.register_error_handler(AwsError, handle)
