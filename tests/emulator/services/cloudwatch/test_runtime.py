"""The metric store: CloudWatch's statistics over what was stored, the EMF lines of a replica's log
(as the tts container writes them), and a log followed line by line, partial lines included."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from emulator.services.cloudwatch.runtime import LogMetrics, Metrics
from emulator.services.cloudwatch.shapes import MetricKey
from emulator.wire.awserrors import AwsError
from tts.serving.metrics import RequestClock, publish_error, publish_request

KEY = MetricKey("VoiceAgent", "TimeToFirstAudio", (("Service", "tts"),))
NOW = 1_800_000_000.0


def store() -> Metrics:
    return Metrics(clock=lambda: NOW)


def put(metrics: Metrics, values: list[float], t: float = NOW - 30) -> None:
    metrics.PutMetricData(
        {
            "Namespace": KEY.namespace,
            "MetricData": [
                {
                    "MetricName": KEY.name,
                    "Dimensions": [{"Name": "Service", "Value": "tts"}],
                    "Timestamp": t,
                    "Value": v,
                }
                for v in values
            ],
        }
    )


def get_metric_data(metrics: Metrics, body: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(metrics.GetMetricData(body))


def query(metrics: Metrics, stat: str, period: int = 60) -> list[float]:
    answer = get_metric_data(
        metrics,
        {
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "MetricDataQueries": [
                {"Id": "q", "MetricStat": {"Metric": KEY.to_json(), "Period": period, "Stat": stat}}
            ],
        },
    )
    return answer["MetricDataResults"][0]["Values"]


def test_the_statistics_of_one_period():
    metrics = store()
    put(metrics, [float(v) for v in range(1, 101)])  # 1..100
    assert query(metrics, "p50") == [50.0]
    assert query(metrics, "p90") == [90.0]
    assert query(metrics, "p99") == [99.0]
    assert query(metrics, "Average") == [50.5]
    assert query(metrics, "Sum") == [5050.0]
    assert query(metrics, "SampleCount") == [100.0]
    assert query(metrics, "Maximum") == [100.0] and query(metrics, "Minimum") == [1.0]


def test_periods_are_aligned_and_newest_first_by_default():
    metrics = store()
    put(metrics, [10.0], t=NOW - 125)
    put(metrics, [20.0], t=NOW - 5)
    answer = get_metric_data(
        metrics,
        {
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "MetricDataQueries": [
                {"Id": "q", "MetricStat": {"Metric": KEY.to_json(), "Period": 60, "Stat": "Maximum"}}
            ],
        },
    )["MetricDataResults"][0]
    assert answer["Values"] == [20.0, 10.0]
    assert (
        all(t % 60 == 0 for t in answer["Timestamps"]) and answer["Timestamps"][0] > answer["Timestamps"][1]
    )


def test_a_statistic_set_has_no_percentiles_and_bad_input_is_typed():
    metrics = store()
    metrics.PutMetricData(
        {
            "Namespace": KEY.namespace,
            "MetricData": [
                {
                    "MetricName": KEY.name,
                    "Dimensions": [{"Name": "Service", "Value": "tts"}],
                    "Timestamp": NOW - 10,
                    "StatisticValues": {"SampleCount": 4, "Sum": 40, "Minimum": 5, "Maximum": 15},
                }
            ],
        }
    )
    assert query(metrics, "Average") == [10.0] and query(metrics, "p90") == []
    for bad in (
        {"Namespace": "AWS/SageMaker", "MetricData": [{"MetricName": "x", "Value": 1}]},
        {"Namespace": "N", "MetricData": [{"MetricName": "x", "Value": float("nan")}]},
        {"Namespace": "N", "MetricData": [{"MetricName": "x"}]},
        {"MetricData": [{"MetricName": "x", "Value": 1}]},
    ):
        with pytest.raises(AwsError) as err:
            metrics.PutMetricData(bad)
        assert err.value.code in {"InvalidParameterValue", "MissingParameter"}
    with pytest.raises(AwsError, match="statistic"):
        query(metrics, "Median")


def test_the_tts_containers_lines_become_its_metrics():
    out = io.StringIO()
    clock = RequestClock(submitted_at=0.0)
    clock.audio(1.0, now=0.25)
    clock.sent(now=0.26)
    clock.load({"sessions": 5, "capacity": 3})
    publish_request(clock, 1.0, out=out)
    publish_error("bad_message", out=out)
    metrics = Metrics()
    stored = sum(metrics.ingest_emf(line) for line in out.getvalue().splitlines())
    assert stored == 8 + 2  # eight request metrics; the error under Service and under Service+ErrorCode
    names = {(k.name, k.dimensions) for k in metrics.metric_keys()}
    assert ("TimeToFirstAudio", (("Service", "tts"),)) in names
    assert ("Errors", (("ErrorCode", "bad_message"), ("Service", "tts"))) in names
    assert ("Errors", (("Service", "tts"),)) in names
    assert (
        metrics.recent(
            MetricKey("VoiceAgent", "SessionsOverCapacity", (("Service", "tts"),)),
            "Maximum",
            3600 * 24 * 365 * 60,
        )
        == 2
    )


def test_lines_that_are_not_emf_are_left_alone():
    metrics = Metrics()
    for line in (
        "INFO starting",
        '{"_aws": 3}',
        '{"_aws": {"CloudWatchMetrics": [{"Namespace": "N"}]}}',
        '{"_aws"',
    ):
        assert metrics.ingest_emf(line) == 0
    assert metrics.metric_keys() == []


def test_a_followed_log_yields_each_line_once_even_when_it_arrives_in_pieces(tmp_path: Path):
    line = json.dumps(
        {
            "_aws": {
                "Timestamp": NOW * 1000,
                "CloudWatchMetrics": [{"Namespace": "N", "Dimensions": [[]], "Metrics": [{"Name": "M"}]}],
            },
            "M": 7,
        }
    )
    log = tmp_path / "endpoint" / "replica-1.log"
    log.parent.mkdir()
    follower = LogMetrics(tmp_path, store())
    log.write_text("booting\n" + line[:20])
    assert follower.poll() == 0
    with log.open("a") as out:
        out.write(line[20:] + "\n")
    assert follower.poll() == 1
    assert follower.poll() == 0
    assert follower.metrics.recent(MetricKey("N", "M"), "Sum", 60) == 7


def put_dims(metrics: Metrics, dims: dict[str, str], value: float, t: float = NOW - 30) -> None:
    metrics.PutMetricData(
        {
            "Namespace": "VoiceAgent",
            "MetricData": [
                {
                    "MetricName": "TimeToFirstAudio",
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                    "Timestamp": t,
                    "Value": value,
                }
            ],
        }
    )


REPLICA_A = {"EndpointName": "voice", "Replica": "a"}
REPLICA_B = {"EndpointName": "voice", "Replica": "b"}


def dims_query(dims: dict[str, str]) -> dict[str, Any]:
    metric = {
        "Namespace": "VoiceAgent",
        "MetricName": "TimeToFirstAudio",
        "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
    }
    return {"Id": "q", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Sum"}}


def test_get_metric_data_answers_only_the_series_of_exactly_those_dimensions():
    """Two replicas' series of one name: a dashboard per replica must not read the other's numbers,
    and CloudWatch matches dimensions exactly, so a subset of them names no series."""
    metrics = store()
    put_dims(metrics, REPLICA_A, 100.0)
    put_dims(metrics, REPLICA_B, 7.0)
    window = {"StartTime": NOW - 600, "EndTime": NOW}
    for dims, expected in (
        (REPLICA_A, [100.0]),
        (REPLICA_B, [7.0]),
        ({"EndpointName": "voice"}, []),
        ({}, []),
        ({**REPLICA_A, "Extra": "x"}, []),
    ):
        answer = get_metric_data(metrics, {**window, "MetricDataQueries": [dims_query(dims)]})
        assert answer["MetricDataResults"][0]["Values"] == expected, dims


def test_get_metric_statistics_answers_only_the_series_of_exactly_those_dimensions():
    metrics = store()
    put_dims(metrics, REPLICA_A, 100.0)
    put_dims(metrics, REPLICA_B, 7.0)
    for dims, expected in (
        (REPLICA_A, [100.0]),
        (REPLICA_B, [7.0]),
        ({"Replica": "a"}, []),
        ({}, []),
    ):
        body = {
            "Namespace": "VoiceAgent",
            "MetricName": "TimeToFirstAudio",
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "Period": 60,
            "Statistics": ["Sum"],
        }
        points = asyncio.run(metrics.GetMetricStatistics(body))["Datapoints"]
        assert [p["Sum"] for p in points] == expected, dims


def test_a_page_ends_after_max_datapoints_and_its_token_gives_the_rest_once():
    metrics = store()
    put(metrics, [1.0], t=NOW - 300)
    for t in range(0, 300, 10):  # one datapoint in each of 30 periods of 10 s
        put(metrics, [float(t)], t=NOW - 300 + t)
    queries = [
        {"Id": stat.lower(), "MetricStat": {"Metric": KEY.to_json(), "Period": 10, "Stat": stat}}
        for stat in ("Maximum", "SampleCount")
    ]
    for scan in ("TimestampDescending", "TimestampAscending"):
        body: dict[str, Any] = {
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "MetricDataQueries": queries,
            "MaxDatapoints": 7,
            "ScanBy": scan,
        }
        seen: dict[str, list[tuple[float, float]]] = {"maximum": [], "samplecount": []}
        pages = 0
        while True:
            answer = get_metric_data(metrics, body)
            pages += 1
            assert sum(len(r["Values"]) for r in answer["MetricDataResults"]) <= 7
            for result in answer["MetricDataResults"]:
                seen[result["Id"]] += zip(result["Timestamps"], result["Values"], strict=True)
            if "NextToken" not in answer:
                break
            assert answer["MetricDataResults"][-1]["StatusCode"] == "PartialData"
            body["NextToken"] = answer["NextToken"]
        assert pages == 9  # 60 datapoints, 7 a page
        times = [t for t, _ in seen["maximum"]]
        assert times == sorted(times, reverse=scan == "TimestampDescending") and len(set(times)) == 30
        assert [v for _, v in sorted(seen["samplecount"])] == [2.0] + [1.0] * 29


def test_a_token_that_get_metric_data_did_not_give_is_refused():
    metrics = store()
    body = {
        "StartTime": NOW - 600,
        "EndTime": NOW,
        "MetricDataQueries": [
            {"Id": "q", "MetricStat": {"Metric": KEY.to_json(), "Period": 60, "Stat": "Sum"}}
        ],
    }
    deep = base64.urlsafe_b64encode(b"[" * 100_000).decode()
    for token in ("not base64 !", "WzUsIG51bGxd", "eyJhIjogMX0=", deep):  # [5, null]: no query 5; {"a": 1}
        with pytest.raises(AwsError) as err:
            get_metric_data(metrics, {**body, "NextToken": token})
        assert err.value.code == "InvalidNextToken"


def test_get_metric_statistics_refuses_more_than_1440_datapoints_as_aws_does():
    metrics = store()
    body = {
        **KEY.to_json(),
        "StartTime": NOW - 86_400,
        "EndTime": NOW,
        "Period": 60,
        "Statistics": ["Sum"],
    }
    assert asyncio.run(metrics.GetMetricStatistics(body))["Datapoints"] == []
    with pytest.raises(AwsError) as err:
        asyncio.run(metrics.GetMetricStatistics({**body, "Period": 1}))
    assert err.value.code == "InvalidParameterCombination" and "86,400 datapoints" in err.value.message


@pytest.mark.parametrize(
    "datum",
    [
        {"Value": 1.7e308},
        {"Value": 2.0**361},
        {"Value": 10**400},
        {"Values": [1.0, 1.7e308]},
        {"Values": [1.0], "Counts": [2.0**400]},
        {"Values": [1.0], "Counts": [-1.0]},
        {"StatisticValues": {"SampleCount": 1, "Sum": 1.7e308, "Minimum": 0, "Maximum": 1}},
        {"StatisticValues": {"SampleCount": -3, "Sum": 1, "Minimum": 0, "Maximum": 1}},
        {"Value": 1, "Unit": 5},
        {"Value": 1, "Unit": "Parsecs"},
    ],
)
def test_a_number_outside_cloudwatchs_range_or_a_unit_it_does_not_know_is_refused(datum: dict[str, Any]):
    """AWS takes values from -2^360 to 2^360; two of 1.7e308 used to sum to Infinity."""
    metrics = store()
    with pytest.raises(AwsError) as err:
        metrics.PutMetricData({"Namespace": "N", "MetricData": [{"MetricName": "M", **datum}]})
    assert err.value.code == "InvalidParameterValue"
    assert metrics.metric_keys() == []


def test_the_largest_values_aws_takes_sum_to_finite_numbers():
    metrics = store()
    put(metrics, [2.0**360] * 150)
    metrics.PutMetricData(
        {
            "Namespace": KEY.namespace,
            "MetricData": [
                {
                    "MetricName": KEY.name,
                    "Dimensions": [{"Name": "Service", "Value": "tts"}],
                    "Timestamp": NOW - 30,
                    "Values": [2.0**360] * 150,
                    "Counts": [2.0**360] * 150,
                }
            ],
        }
    )
    for stat in ("Sum", "Average", "SampleCount", "p99"):
        (value,) = query(metrics, stat)
        assert math.isfinite(value), stat
    json.dumps(asyncio.run(metrics.summary(600)), allow_nan=False)


def test_an_emf_line_with_numbers_or_a_unit_cloudwatch_refuses_stores_only_what_it_takes():
    """A replica's line with `Infinity`, `NaN`, 1e400 or a unit of 5: what would break a later read
    (a JSON answer with `Infinity`, `python -m emulator metrics`) is left out."""
    metrics = Metrics(clock=lambda: NOW)
    directive = {
        "Timestamp": NOW * 1000,
        "CloudWatchMetrics": [
            {"Namespace": "N", "Dimensions": [[]], "Metrics": [{"Name": "M", "Unit": 5}, {"Name": "Bad"}]}
        ],
    }
    line = json.dumps({"_aws": directive, "M": [1.0, 2.0]})[:-1] + ', "Bad": [Infinity, NaN, 1e400]}'
    assert metrics.ingest_emf(line) == 1
    (row,) = asyncio.run(metrics.summary(60))
    assert row["MetricName"] == "M" and row["Unit"] == "None" and row["SampleCount"] == 2.0
    assert metrics.ingest_emf(json.dumps({"_aws": {**directive, "Timestamp": float("inf")}, "M": 1})) == 0
