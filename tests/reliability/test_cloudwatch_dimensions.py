"""What a CloudWatch query reads, through boto3 against a running emulator: only the series of exactly
its dimensions (two replicas' series of one name: a dashboard per replica, or per endpoint, must not read
every replica's numbers, and no test caught a GetMetricData that answered any series of the namespace and
name), and a page of at most MaxDatapoints, the rest behind NextToken."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.emulator.support import boto_client
from tests.reliability.emulator_support import empty_emulator, say

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cloudwatch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with empty_emulator(tmp_path_factory.mktemp("cloudwatch")) as running:
        yield boto_client(running, "cloudwatch")


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


ENDPOINT = [{"Name": "EndpointName", "Value": "voice"}]
REPLICAS = {
    "a": [*ENDPOINT, {"Name": "Replica", "Value": "a"}],
    "b": [*ENDPOINT, {"Name": "Replica", "Value": "b"}],
}


@pytest.fixture(scope="module")
def two_replicas(cloudwatch) -> None:
    """One metric name, two series: a replica's first audio at 100 ms, the other's at 7 ms."""
    for name, value in (("a", 100.0), ("b", 7.0)):
        cloudwatch.put_metric_data(
            Namespace="Dims",
            MetricData=[{"MetricName": "FirstAudio", "Dimensions": REPLICAS[name], "Value": value}],
        )


@pytest.mark.parametrize(
    ("dims", "expected"),
    [
        (REPLICAS["a"], [100.0]),
        (REPLICAS["b"], [7.0]),
        (ENDPOINT, []),  # a subset of the dimensions names no series
        ([], []),
        ([*REPLICAS["a"], {"Name": "Extra", "Value": "x"}], []),
    ],
    ids=["replica a", "replica b", "a subset", "none", "a superset"],
)
def test_each_query_reads_only_the_series_of_exactly_its_dimensions(cloudwatch, two_replicas, dims, expected):
    """A dashboard per replica (or per endpoint) must not read every replica's numbers: CloudWatch
    matches dimensions exactly."""
    metric = {"Namespace": "Dims", "MetricName": "FirstAudio", "Dimensions": dims}
    window = {"StartTime": now() - dt.timedelta(minutes=5), "EndTime": now() + dt.timedelta(minutes=1)}
    data = cloudwatch.get_metric_data(
        MetricDataQueries=[{"Id": "q", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Maximum"}}],
        **window,
    )["MetricDataResults"][0]["Values"]
    statistics = cloudwatch.get_metric_statistics(**metric, **window, Period=60, Statistics=["Maximum"])
    say(
        f"dimensions {[d['Value'] for d in dims]}",
        f"GetMetricData {data}, GetMetricStatistics {statistics['Datapoints']}",
    )
    assert data == expected
    assert [p["Maximum"] for p in statistics["Datapoints"]] == expected


def test_a_client_with_botocore_defaults_reads_a_page_and_its_next(cloudwatch):
    """MaxDatapoints pages: boto3's paginator follows NextToken to the end."""
    data = [
        {"MetricName": "Paged", "Timestamp": time.time() - 600 + t, "Value": float(t)}
        for t in range(0, 600, 10)
    ]
    cloudwatch.put_metric_data(Namespace="Pages", MetricData=data)
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {"Namespace": "Pages", "MetricName": "Paged"},
                    "Period": 10,
                    "Stat": "Sum",
                },
            }
        ],
        StartTime=now() - dt.timedelta(minutes=15),
        EndTime=now(),
        MaxDatapoints=25,
    )
    values = [v for page in pages for result in page["MetricDataResults"] for v in result["Values"]]
    assert sorted(values) == [float(t) for t in range(0, 600, 10)]
