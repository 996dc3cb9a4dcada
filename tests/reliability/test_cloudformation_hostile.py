"""The emulated CloudFormation (and STS, the other awsQuery service) under hostile requests, through boto3
and raw forms against a running emulator: every refusal is a typed 400 in the service's XML envelope,
which botocore parses, never a 500 in JSON (which boto3 cannot parse from a query service: "Unable to
parse response ... invalid XML received"); and what the model refuses creates nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import botocore.exceptions
import botocore.session
import httpx
import pytest
from botocore.parsers import QueryParser

from emulator.server import Emulator
from emulator.services.cloudformation.routes import PATH
from emulator.services.sts.routes import PATH as STS_PATH
from tests.emulator.support import boto_client
from tests.reliability.emulator_support import empty_emulator, say

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]

TOPIC = {"Topic": {"Type": "AWS::SNS::Topic"}}
GOOD = json.dumps({"Resources": TOPIC})
MODEL = botocore.session.get_session().get_service_model("cloudformation")


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with empty_emulator(tmp_path_factory.mktemp("cloudformation")) as running:
        yield running


@pytest.fixture(scope="module")
def cloudformation(emu: Emulator) -> Any:
    return boto_client(
        emu, "cloudformation", validate=False, path=PATH, config={"retries": {"max_attempts": 1}}
    )


def error_of(call: Any) -> dict[str, Any]:
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call()
    return raised.value.response


def posted(emu: Emulator, path: str, form: str) -> tuple[int, dict[str, Any], str]:
    """A raw form, and botocore's reading of the answer (its parser raises on what is not XML)."""
    response = httpx.post(
        emu.http_url + path,
        content=form.encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
        timeout=30,
        trust_env=False,
    )
    if response.status_code < 400:
        return response.status_code, {}, response.headers.get("content-type", "")
    parsed = QueryParser().parse(
        {"body": response.content, "headers": dict(response.headers), "status_code": response.status_code},
        MODEL.operation_model("CreateStack").output_shape,
    )
    return response.status_code, parsed["Error"], response.headers.get("content-type", "")


TEMPLATES = {
    "nested 100,000 deep": "[" * 100_000 + "]" * 100_000,
    "nested 101 deep": json.dumps(
        {"Resources": TOPIC, "Metadata": json.loads('{"a":' * 101 + "1" + "}" * 101)}
    ),
    "Parameters a string": json.dumps({"Resources": TOPIC, "Parameters": "x"}),
    "a parameter a list": json.dumps({"Resources": TOPIC, "Parameters": {"P": [1]}}),
    "Outputs a list": json.dumps({"Resources": TOPIC, "Outputs": ["x"]}),
}


@pytest.mark.parametrize("case", list(TEMPLATES))
def test_a_template_of_the_wrong_shape_is_a_validation_error_boto3_reads(cloudformation, case: str):
    response = error_of(
        lambda: cloudformation.create_stack(StackName="Hostile", TemplateBody=TEMPLATES[case])
    )
    say(
        f"CreateStack, a template {case}", f"{response['Error']['Code']}: {response['Error']['Message'][:60]}"
    )
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Code"] == "ValidationError"
    assert "Template format error" in response["Error"]["Message"]


REQUESTS = {
    "Parameters a string": "Parameters=x",
    "a parameter a string": "Parameters.member.1=x",
    "a parameter's key an object": "Parameters.member.1.ParameterKey.a=1",
    "Tags a string": "Tags=x",
    "a tag a string": "Tags.member.1=x",
    "a tag's key an object": "Tags.member.1.Key.a=1&Tags.member.1.Value=v",
    "a tag without its value": "Tags.member.1.Key=k",
    "51 tags": "&".join(f"Tags.member.{i}.Key=k{i}&Tags.member.{i}.Value=v" for i in range(1, 52)),
    "TimeoutInMinutes ten": "TimeoutInMinutes=ten",
    "TimeoutInMinutes of 400 digits": "TimeoutInMinutes=" + "9" * 400,
    "DisableRollback maybe": "DisableRollback=maybe",
    "OnFailure EXPLODE": "OnFailure=EXPLODE",
    "Capabilities a string": "Capabilities=CAPABILITY_IAM",
}


@pytest.mark.parametrize("case", list(REQUESTS))
def test_a_request_of_the_wrong_shape_is_a_validation_error_in_xml(emu: Emulator, cloudformation, case: str):
    """`Parameters`/`Tags` of the wrong shape reached CreateStack, whose AttributeError was a 500 in
    JSON; a TimeoutInMinutes of `ten` or a DisableRollback of `maybe` created the stack."""
    form = f"Action=CreateStack&Version=2010-05-15&StackName=Hostile&TemplateBody={GOOD}&{REQUESTS[case]}"
    status, error, kind = posted(emu, PATH, form)
    say(f"CreateStack, {case}", f"{status} {error.get('Code')}: {error.get('Message', '')[:60]}")
    assert (status, error["Code"]) == (400, "ValidationError") and kind.startswith("text/xml")
    assert (
        error_of(lambda: cloudformation.describe_stacks(StackName="Hostile"))["Error"]["Code"]
        == "ValidationError"
    )


def test_a_parameter_name_nested_past_the_recursion_limit_is_malformed_in_xml(emu: Emulator):
    status, error, kind = posted(emu, PATH, "Action=DescribeStacks&" + "a." * 100_000 + "b=1")
    say("DescribeStacks, a parameter 100,000 names deep", f"{status} {error.get('Code')}")
    assert (status, error["Code"]) == (400, "MalformedQueryString") and kind.startswith("text/xml")


def test_sts_checks_its_model_too_and_answers_in_its_xml(emu: Emulator):
    status, _, kind = posted(emu, STS_PATH, "Action=GetCallerIdentity&Version=2011-06-15&Unmodelled.a.b=1")
    assert status == 200 and kind.startswith("text/xml")
    status, error, kind = posted(emu, STS_PATH, "Action=AssumeRole&RoleArn=x")
    assert (status, error["Code"]) == (400, "InvalidAction") and kind.startswith("text/xml")


def test_the_service_still_creates_a_good_stack_after_the_battery(cloudformation):
    cloudformation.create_stack(
        StackName="Good",
        TemplateBody=GOOD,
        Tags=[{"Key": "k", "Value": "v"}],
        TimeoutInMinutes=5,
        DisableRollback=True,
    )
    waiter = cloudformation.get_waiter("stack_create_complete")
    waiter.wait(StackName="Good", WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})
    (stack,) = cloudformation.describe_stacks(StackName="Good")["Stacks"]
    assert stack["Tags"] == [{"Key": "k", "Value": "v"}] and stack["DisableRollback"] is True
