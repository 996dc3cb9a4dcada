"""CloudWatch through boto3 unchanged against a running emulator (SigV4 on): botocore picks the JSON
protocol from CloudWatch's model, and the same client lists, queries and alarms on what was put."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import botocore.exceptions
import pytest

from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import boto_client, fast_config, manifest

KEY, SECRET = "AKIDCLOUDWATCH", "cloudwatch-secret"
DIMS = [{"Name": "Service", "Value": "tts"}]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    config = fast_config(tmp_path_factory.mktemp("cloudwatch"), sigv4_keys={KEY: SECRET})
    with emulator_in_thread(config, manifest([])) as running:
        yield running


@pytest.fixture(scope="module")
def cloudwatch(emu: Emulator):
    return boto_client(emu, "cloudwatch", key=KEY, secret=SECRET)


def test_the_env_names_cloudwatch(emu: Emulator):
    assert emu.env["AWS_ENDPOINT_URL_CLOUDWATCH"] == emu.http_url


def test_put_then_list_and_get_metric_data_with_percentiles(cloudwatch):
    now = dt.datetime.now(dt.UTC)
    cloudwatch.put_metric_data(
        Namespace="Test/Routes",
        MetricData=[
            {
                "MetricName": "FirstAudio",
                "Dimensions": DIMS,
                "Values": [100.0, 200.0, 300.0, 400.0],
                "Unit": "Milliseconds",
            }
        ],
    )
    listed = cloudwatch.list_metrics(Namespace="Test/Routes")["Metrics"]
    assert listed == [{"Namespace": "Test/Routes", "MetricName": "FirstAudio", "Dimensions": DIMS}]
    metric = {"Namespace": "Test/Routes", "MetricName": "FirstAudio", "Dimensions": DIMS}
    answer = cloudwatch.get_metric_data(
        StartTime=now - dt.timedelta(minutes=5),
        EndTime=now + dt.timedelta(minutes=1),
        MetricDataQueries=[
            {"Id": stat.lower(), "MetricStat": {"Metric": metric, "Period": 60, "Stat": stat}}
            for stat in ("p50", "p90", "Average", "SampleCount", "Maximum")
        ],
    )
    values = {r["Id"]: r["Values"] for r in answer["MetricDataResults"]}
    assert values == {
        "p50": [200.0],
        "p90": [400.0],
        "average": [250.0],
        "samplecount": [4.0],
        "maximum": [400.0],
    }
    timestamps = answer["MetricDataResults"][0]["Timestamps"]
    assert isinstance(timestamps[0], dt.datetime) and abs(timestamps[0].timestamp() - time.time()) < 120
    stats = cloudwatch.get_metric_statistics(
        **metric,
        StartTime=now - dt.timedelta(minutes=5),
        EndTime=now + dt.timedelta(minutes=1),
        Period=60,
        Statistics=["Sum"],
        ExtendedStatistics=["p99"],
    )["Datapoints"]
    assert stats[0]["Sum"] == 1000.0 and stats[0]["ExtendedStatistics"] == {"p99": 400.0}


def test_alarms_and_dashboards_by_their_aws_operations(cloudwatch):
    cloudwatch.put_metric_alarm(
        AlarmName="first-audio-p90",
        Namespace="Test/Routes",
        MetricName="FirstAudio",
        Dimensions=DIMS,
        ExtendedStatistic="p90",
        Period=60,
        EvaluationPeriods=3,
        Threshold=500,
        ComparisonOperator="GreaterThanThreshold",
        AlarmActions=["arn:aws:sns:us-east-1:111122223333:voice-alarms"],
    )
    alarms = cloudwatch.describe_alarms(AlarmNames=["first-audio-p90"])["MetricAlarms"]
    assert alarms[0]["StateValue"] in {"INSUFFICIENT_DATA", "OK"} and alarms[0]["ExtendedStatistic"] == "p90"
    assert alarms[0]["AlarmArn"].endswith(":alarm:first-audio-p90")
    cloudwatch.put_dashboard(DashboardName="voice", DashboardBody='{"widgets": []}')
    assert cloudwatch.get_dashboard(DashboardName="voice")["DashboardBody"] == '{"widgets": []}'
    assert [d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]] == ["voice"]
    cloudwatch.delete_dashboards(DashboardNames=["voice"])
    cloudwatch.delete_alarms(AlarmNames=["first-audio-p90"])
    assert cloudwatch.describe_alarms(AlarmNames=["first-audio-p90"])["MetricAlarms"] == []


def test_errors_are_typed_as_botocore_reads_them(cloudwatch):
    with pytest.raises(cloudwatch.exceptions.ResourceNotFound):
        cloudwatch.get_dashboard(DashboardName="none")
    with pytest.raises(botocore.exceptions.ClientError) as err:
        cloudwatch.put_metric_data(Namespace="AWS/SageMaker", MetricData=[{"MetricName": "x", "Value": 1.0}])
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_a_wrong_signature_is_refused(emu: Emulator):
    wrong = boto_client(emu, "cloudwatch", key=KEY, secret="not-the-secret")
    with pytest.raises(botocore.exceptions.ClientError) as err:
        wrong.list_metrics()
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
