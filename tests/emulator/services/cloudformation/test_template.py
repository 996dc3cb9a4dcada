"""A template read within its bounds, its intrinsic functions, conditions and creation order resolved
without any service."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulator.services.cloudformation import template
from emulator.services.cloudformation.template import Scope, TemplateError, condition, creation_order, resolve

ACCOUNT, REGION = "123456789012", "us-east-1"


def test_intrinsics_resolve_to_local_values():
    scope = Scope(ACCOUNT, REGION, "S", refs={"Bucket": "b"}, exports={"E:x": "role-arn"})
    scope.parameters["Size"] = "3"
    scope.attrs[("Bucket", "Arn")] = "arn:aws:s3:::b"
    scope.conditions = {"InEast": {"Fn::Equals": [{"Ref": "AWS::Region"}, REGION]}}
    value = {
        "join": {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":", {"Ref": "Bucket"}]]},
        "sub": {"Fn::Sub": "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/r:${Bucket.Arn}"},
        "sub_vars": {"Fn::Sub": ["${X}-${AWS::StackName}-${Size}", {"X": {"Ref": "Bucket"}}]},
        "import": {"Fn::ImportValue": "E:x"},
        "list": [{"Fn::GetAtt": ["Bucket", "Arn"]}, 3, {"Ref": "AWS::NoValue"}],
        "select": {"Fn::Select": [1, {"Fn::Split": ["/", "a/b/c"]}]},
        "if": {"Fn::If": ["InEast", "east", "elsewhere"]},
        "dropped": {"Ref": "AWS::NoValue"},
    }
    assert resolve(value, scope) == {
        "join": "arn:aws:b",
        "sub": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/r:arn:aws:s3:::b",
        "sub_vars": "b-S-3",
        "import": "role-arn",
        "list": ["arn:aws:s3:::b", 3],
        "select": "b",
        "if": "east",
    }
    assert condition("InEast", scope) is True


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"Ref": "Nothing"}, "Ref Nothing names nothing created before it"),
        ({"Fn::ImportValue": "Other:x"}, "no stack exports it"),
        ({"Fn::GetAtt": ["Nothing", "Arn"]}, "Nothing.Arn is not known"),
        ({"Fn::GetAZs": ""}, "cannot resolve Fn::GetAZs"),
        ({"Fn::If": ["Missing", 1, 2]}, "no condition named Missing"),
    ],
)
def test_what_cannot_be_resolved_is_a_clear_error(value: dict[str, Any], message: str):
    with pytest.raises(TemplateError, match=message):
        resolve(value, Scope(ACCOUNT, REGION, "S"))


def test_each_resource_comes_after_what_it_references_or_depends_on():
    resources = {
        "Endpoint": {"Properties": {"Config": {"Ref": "Config"}}},
        "Config": {"Properties": {"Model": {"Fn::GetAtt": ["Model", "ModelName"]}}},
        "Alarm": {"DependsOn": "Endpoint", "Properties": {"Name": {"Fn::Sub": "${Topic.TopicName}"}}},
        "Model": {},
        "Topic": {},
    }
    order = creation_order(resources)
    assert order == ["Model", "Config", "Endpoint", "Topic", "Alarm"]
    with pytest.raises(TemplateError, match="circular reference"):
        creation_order({"A": {"Properties": {"X": {"Ref": "B"}}}, "B": {"DependsOn": ["A"]}})


RESOURCES = {"Topic": {"Type": "AWS::SNS::Topic"}}


def nest(levels: int) -> Any:
    """A value `levels` objects deep."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            '{"a":' * 100_000 + "1" + "}" * 100_000,
            "the emulator reads JSON templates",
        ),  # the parser's recursion
        (json.dumps({"Resources": RESOURCES, "Metadata": nest(101)}), "nests deeper than 100 levels"),
        ("[1]", "At least one Resources member"),
        (json.dumps({"Resources": RESOURCES, "Parameters": "x"}), "Parameters is an object of named objects"),
        (json.dumps({"Resources": RESOURCES, "Parameters": {"P": "x"}}), "Parameters is an object of named"),
        (json.dumps({"Resources": RESOURCES, "Outputs": [1]}), "Outputs is an object of named objects"),
        (json.dumps({"Resources": RESOURCES, "Conditions": 5}), "Conditions is an object"),
    ],
    ids=[
        "100,000 deep",
        "101 deep",
        "not an object",
        "Parameters a string",
        "a parameter a string",
        "Outputs a list",
        "Conditions a number",
    ],
)
def test_a_template_of_the_wrong_shape_is_a_template_format_error(text: str, words: str):
    with pytest.raises(TemplateError) as caught:
        template.parse(text)
    assert str(caught.value).startswith("Template format error") and words in str(caught.value)


def test_a_template_as_deep_as_allowed_is_read():
    deep = {"Resources": RESOURCES, "Metadata": nest(98)}
    assert template.parse(json.dumps(deep)) == deep
