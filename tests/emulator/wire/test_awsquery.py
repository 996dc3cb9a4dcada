"""awsQuery written once (emulator/wire/awsquery.py): botocore's flattened form back into the request's
shape, a result's members into the XML botocore parses back into the same shape, and every error, an
unexpected one included, in the service's XML envelope."""

from __future__ import annotations

import botocore.session
from botocore.parsers import QueryParser
from botocore.serialize import QuerySerializer
from quart import Quart

from emulator.services.cloudformation.errors import NAMESPACE
from emulator.wire.awsquery import aws_query_blueprint, to_xml, unflatten


def _model(service: str):
    return botocore.session.get_session().get_service_model(service)


def _parsed(action: str, result: dict) -> dict:
    """`result` written as CloudFormation's answer to `action`, read back by botocore's own parser."""
    body = (
        f'<{action}Response xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">'
        f"<{action}Result>{to_xml(result)}</{action}Result></{action}Response>"
    ).encode()
    shape = _model("cloudformation").operation_model(action).output_shape
    return QueryParser().parse({"body": body, "headers": {}, "status_code": 200}, shape)


def test_the_form_botocore_flattens_comes_back_as_the_request():
    operation = _model("cloudformation").operation_model("CreateStack")
    request = {
        "StackName": "S",
        "TemplateBody": "{}",
        "Capabilities": ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
        "Parameters": [
            {"ParameterKey": "A", "ParameterValue": "1"},
            {"ParameterKey": "B", "ParameterValue": "2"},
        ],
        "Tags": [{"Key": "project", "Value": "voice"}],
    }
    form = QuerySerializer().serialize_to_request(request, operation)["body"]
    params = unflatten(form)
    assert params.pop("Action") == "CreateStack" and params.pop("Version")
    assert params == request


def test_a_result_is_the_xml_botocore_parses_back():
    result = {
        "Stacks": [
            {
                "StackName": "S",
                "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/S/1",
                "CreationTime": "2026-01-01T00:00:00.000+00:00",
                "StackStatus": "CREATE_COMPLETE",
                "Outputs": [{"OutputKey": "Arn", "OutputValue": "a<b&c"}],
            }
        ]
    }
    (stack,) = _parsed("DescribeStacks", result)["Stacks"]
    assert stack["StackName"] == "S" and stack["StackStatus"] == "CREATE_COMPLETE"
    assert stack["Outputs"] == [{"OutputKey": "Arn", "OutputValue": "a<b&c"}]
    assert stack["CreationTime"].year == 2026


def test_characters_xml_cannot_carry_are_spelled_out_and_the_answer_still_parses():
    """A failed image build's log in a stack event's reason: Docker's ANSI colour (ESC) and a NUL."""
    reason = "building failed: \x1b[91mERROR: No space left on device\x1b[0m\x00 <&> été"
    event = {"StackId": "s", "EventId": "e", "StackName": "S", "Timestamp": "2026-01-01T00:00:00Z"}
    result = {"StackEvents": [{**event, "ResourceStatusReason": reason}]}
    (event,) = _parsed("DescribeStackEvents", result)["StackEvents"]
    assert event["ResourceStatusReason"] == (
        "building failed: \\x1b[91mERROR: No space left on device\\x1b[0m\\x00 <&> été"
    )


def _served(operations: dict) -> Quart:
    served = Quart("awsquery-test")
    served.register_blueprint(
        aws_query_blueprint("CloudFormation", "/cf/", NAMESPACE, operations, "cloudformation")
    )
    return served


async def _error(operations: dict, form: dict[str, str] | str) -> tuple[int, dict]:
    client = _served(operations).test_client()
    if isinstance(form, str):
        headers = {"content-type": "application/x-www-form-urlencoded"}
        response = await client.post("/cf/", data=form.encode(), headers=headers)
    else:
        response = await client.post("/cf/", form=form)
    body = await response.get_data()
    assert response.content_type.startswith("text/xml")
    parsed = QueryParser().parse(
        {"body": body, "headers": dict(response.headers), "status_code": response.status_code},
        _model("cloudformation").operation_model("DescribeStacks").output_shape,
    )
    return response.status_code, parsed["Error"]


async def test_an_unexpected_failure_is_answered_in_the_services_xml_envelope():
    def broken(body: dict) -> dict:
        raise RuntimeError("a bug")

    status, error = await _error({"DescribeStacks": broken}, {"Action": "DescribeStacks"})
    assert status == 500 and error["Code"] == "InternalFailure" and "a bug" in error["Message"]


async def test_a_request_the_model_refuses_never_reaches_the_operation():
    reached = []
    status, error = await _error(
        {"CreateStack": reached.append},
        {"Action": "CreateStack", "StackName": "s", "TemplateBody": "{}", "Parameters": "x"},
    )
    assert (status, error["Code"], reached) == (400, "ValidationError", [])


async def test_a_parameter_name_nested_past_the_recursion_limit_is_malformed():
    form = "Action=DescribeStacks&" + "a." * 100_000 + "b=1"
    status, error = await _error({"DescribeStacks": lambda body: {}}, form)
    assert (status, error["Code"]) == (400, "MalformedQueryString")
