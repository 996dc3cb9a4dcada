"""The endpoint stack's dashboard and alarms, read from the synthesized template: each alarm on the
metric the container (EMF) or SageMaker publishes, the SNS topic only with `--alarm-email`, and no IAM
statement added for them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra: pip install -e '.[cdk]'")

from aws_cdk import App
from aws_cdk.assertions import Template

from deploy.flags import add_building, config_from
from deploy.parts.endpoint import EndpointPart
from deploy.stacks.observability import ObservabilityStack
from facts import METRICS_NAMESPACE
from tests.deploy.conftest import image_uris_config

pytestmark = pytest.mark.cdk


def template(tmp_path: Path, **overrides: object) -> dict:
    app = App(outdir=str(tmp_path / "cdk.out"), analytics_reporting=False)
    config = image_uris_config(tmp_path, **overrides)
    stack = ObservabilityStack(app, "Observability", config=config, settings=config.speech_endpoint)
    return Template.from_stack(stack).to_json()


def of_type(resources: dict, kind: str) -> dict[str, dict]:
    return {name: r["Properties"] for name, r in resources.items() if r["Type"] == kind}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return template(tmp_path_factory.mktemp("plain"))["Resources"]


def test_the_alarms_watch_the_containers_and_sagemakers_metrics(plain: dict):
    alarms = {p["AlarmName"]: p for p in of_type(plain, "AWS::CloudWatch::Alarm").values()}
    assert set(alarms) == {
        f"kokoro-82m-{name}"
        for name in (
            "first-audio-p90",
            "error-rate",
            "sessions-over-capacity",
            "invocation-5xx",
            "model-setup-time",
        )
    }
    first = alarms["kokoro-82m-first-audio-p90"]
    assert (first["Namespace"], first["MetricName"], first["ExtendedStatistic"]) == (
        METRICS_NAMESPACE,
        "TimeToFirstAudio",
        "p90",
    )
    assert first["Threshold"] == 1000 and first["Dimensions"] == [{"Name": "Service", "Value": "tts"}]
    over = alarms["kokoro-82m-sessions-over-capacity"]
    assert (over["MetricName"], over["Statistic"], over["EvaluationPeriods"], over["Period"]) == (
        "SessionsOverCapacity",
        "Maximum",
        5,
        60,
    )
    assert over["ComparisonOperator"] == "GreaterThanThreshold" and over["Threshold"] == 0
    five_xx = alarms["kokoro-82m-invocation-5xx"]
    assert five_xx["Namespace"] == "AWS/SageMaker" and {d["Name"] for d in five_xx["Dimensions"]} == {
        "EndpointName",
        "VariantName",
    }
    rate = alarms["kokoro-82m-error-rate"]
    expressions = [m["Expression"] for m in rate["Metrics"] if "Expression" in m]
    assert expressions == ["100 * errors / MAX([errors + requests, 1])"]
    assert all(p["TreatMissingData"] == "notBreaching" for p in alarms.values())
    assert all("AlarmActions" not in p for p in alarms.values()), "no topic without --alarm-email"
    assert of_type(plain, "AWS::SNS::Topic") == {}


def test_the_dashboard_shows_first_audio_stalls_capacity_errors_and_invocations(plain: dict):
    (dashboard,) = of_type(plain, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["DashboardName"] == "kokoro-82m-voice"
    body = dashboard["DashboardBody"]
    text = body if isinstance(body, str) else json.dumps(body)
    for shown in (
        "TimeToFirstAudio",
        "Stalls",
        "SessionsActive",
        "Capacity",
        "Errors",
        "InvocationsPerInstance",
    ):
        assert shown in text


def test_an_alarm_email_adds_a_topic_that_every_alarm_notifies(tmp_path: Path):
    resources = template(tmp_path, alarm_email="oncall@example.com", first_audio_alarm_ms=800.0)["Resources"]
    (topic,) = of_type(resources, "AWS::SNS::Topic")
    (subscription,) = of_type(resources, "AWS::SNS::Subscription").values()
    assert subscription["Protocol"] == "email" and subscription["Endpoint"] == "oncall@example.com"
    alarms = of_type(resources, "AWS::CloudWatch::Alarm").values()
    assert all(p["AlarmActions"] == [{"Ref": topic}] and p["OKActions"] == [{"Ref": topic}] for p in alarms)
    assert {p["Threshold"] for p in alarms if p.get("MetricName") == "TimeToFirstAudio"} == {800}
    assert of_type(resources, "AWS::IAM::Policy") == {} and of_type(resources, "AWS::SNS::TopicPolicy") == {}


def test_the_flags_reach_the_config():
    import argparse

    parser = argparse.ArgumentParser()
    add_building(parser)
    image = ["--tts-image-uri", "123456789012.dkr.ecr.us-east-1.amazonaws.com/k:gpu"]
    args = parser.parse_args([*image, "--alarm-email", "a@example.com", "--first-audio-alarm-ms", "700"])
    config = config_from(args)
    assert (config.alarm_email, config.first_audio_alarm_ms) == ("a@example.com", 700.0)
    with pytest.raises(Exception, match="not an email"):
        config_from(parser.parse_args([*image, "--alarm-email", "nobody"]))


def test_both_targets_deploy_the_stack(tmp_path: Path):
    """One deploy path: the emulated CloudFormation puts the alarms and dashboard into the emulated
    CloudWatch, as AWS's does."""
    for target in ("aws", "local"):
        config = image_uris_config(tmp_path, target=target)
        stacks = EndpointPart(config, config.speech_endpoint).stacks
        assert stacks[-1] == "KokoroSpeech-kokoro-82m-Observability"
