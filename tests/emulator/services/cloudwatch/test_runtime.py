"""The metric store: CloudWatch's statistics over what was stored, the EMF lines of a replica's log
(as the tts container writes them), and a log followed line by line, partial lines included."""

from __future__ import annotations

import io
import json
from pathlib import Path

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


def query(metrics: Metrics, stat: str, period: int = 60) -> list[float]:
    answer = metrics.GetMetricData(
        {
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "MetricDataQueries": [
                {"Id": "q", "MetricStat": {"Metric": KEY.to_json(), "Period": period, "Stat": stat}}
            ],
        }
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
    answer = metrics.GetMetricData(
        {
            "StartTime": NOW - 600,
            "EndTime": NOW,
            "MetricDataQueries": [
                {"Id": "q", "MetricStat": {"Metric": KEY.to_json(), "Period": 60, "Stat": "Maximum"}}
            ],
        }
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
        metrics.recent("VoiceAgent", "SessionsOverCapacity", "Maximum", 3600 * 24 * 365 * 60, Service="tts")
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
    assert follower.metrics.recent("N", "M", "Sum", 60) == 7
