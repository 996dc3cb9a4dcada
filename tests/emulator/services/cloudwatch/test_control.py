"""Alarms evaluated against the stored metrics on a clock the test moves: ALARM when enough of the last
periods breach, OK when they stop, what a period without data counts as, the history of each change."""

from __future__ import annotations

import pytest

from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.services.cloudwatch.runtime import Metrics
from emulator.wire.awserrors import AwsError

T0 = 1_800_000_000.0  # a multiple of 10: periods start on it


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def control() -> tuple[CloudWatchControl, Clock]:
    clock = Clock()
    return CloudWatchControl(Metrics(clock=clock), "us-east-1", "111122223333", clock=clock), clock


def alarm(**overrides: object) -> dict:
    return {
        "AlarmName": "sessions-over-capacity",
        "Namespace": "VoiceAgent",
        "MetricName": "SessionsOverCapacity",
        "Dimensions": [{"Name": "Service", "Value": "tts"}],
        "Statistic": "Maximum",
        "Period": 10,
        "EvaluationPeriods": 2,
        "DatapointsToAlarm": 2,
        "Threshold": 0,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "notBreaching",
        **overrides,
    }


def over(cw: CloudWatchControl, t: float, value: float) -> None:
    cw.metrics.PutMetricData(
        {
            "Namespace": "VoiceAgent",
            "MetricData": [
                {
                    "MetricName": "SessionsOverCapacity",
                    "Dimensions": [{"Name": "Service", "Value": "tts"}],
                    "Timestamp": t,
                    "Value": value,
                }
            ],
        }
    )


def state(cw: CloudWatchControl, name: str = "sessions-over-capacity") -> str:
    return cw.DescribeAlarms({"AlarmNames": [name]})["MetricAlarms"][0]["StateValue"]


def test_two_breaching_periods_raise_the_alarm_and_quiet_ones_clear_it():
    cw, clock = control()
    cw.PutMetricAlarm(alarm())
    assert state(cw) == "INSUFFICIENT_DATA"
    over(cw, T0 + 1, 2)
    clock.now = T0 + 10
    cw.evaluate()
    assert state(cw) == "OK"  # one breaching period of two: not yet
    over(cw, T0 + 12, 1)
    clock.now = T0 + 20
    cw.evaluate()
    assert state(cw) == "ALARM"
    over(cw, T0 + 21, 0)
    clock.now = T0 + 30
    cw.evaluate()
    assert state(cw) == "OK"  # the last two periods: one breaching, one at 0
    history = cw.DescribeAlarmHistory(
        {"AlarmName": "sessions-over-capacity", "HistoryItemType": "StateUpdate"}
    )
    summaries = [item["HistorySummary"] for item in reversed(history["AlarmHistoryItems"])]
    assert summaries == [
        "Alarm updated from INSUFFICIENT_DATA to OK",
        "Alarm updated from OK to ALARM",
        "Alarm updated from ALARM to OK",
    ]


def test_missing_data_is_what_treat_missing_data_says():
    cw, clock = control()
    for treat in ("missing", "breaching", "notBreaching", "ignore"):
        cw.PutMetricAlarm(alarm(AlarmName=treat, TreatMissingData=treat))
    clock.now = T0 + 100
    cw.evaluate()
    assert [state(cw, t) for t in ("missing", "breaching", "notBreaching", "ignore")] == [
        "INSUFFICIENT_DATA",
        "ALARM",
        "OK",
        "INSUFFICIENT_DATA",
    ]


def test_a_percentile_alarm_and_the_reason_names_the_values():
    cw, clock = control()
    cw.PutMetricAlarm(
        alarm(
            AlarmName="p90",
            Statistic=None,
            ExtendedStatistic="p90",
            Threshold=5,
            EvaluationPeriods=1,
            DatapointsToAlarm=1,
        )
    )
    for value in range(1, 11):
        over(cw, T0 + 1, value)
    clock.now = T0 + 10
    cw.evaluate()
    described = cw.DescribeAlarms({"AlarmNamePrefix": "p9"})["MetricAlarms"][0]
    assert described["StateValue"] == "ALARM" and "[9]" in described["StateReason"]


def test_bad_alarms_and_unknown_names_are_typed_errors():
    cw, _ = control()
    for bad, code in (
        (alarm(ComparisonOperator="LessThanLowerOrGreaterThanUpperThreshold"), "InvalidParameterValue"),
        (alarm(Period=7), "InvalidParameterValue"),
        (alarm(ExtendedStatistic="p90"), "InvalidParameterCombination"),
        (alarm(DatapointsToAlarm=3), "InvalidParameterValue"),
        ({k: v for k, v in alarm().items() if k != "Threshold"}, "MissingParameter"),
    ):
        with pytest.raises(AwsError) as err:
            cw.PutMetricAlarm(bad)
        assert err.value.code == code
    with pytest.raises(AwsError) as err:
        cw.DeleteAlarms({"AlarmNames": ["nope"]})
    assert err.value.code == "ResourceNotFound"


def test_dashboards_are_kept_as_given():
    cw, _ = control()
    body = '{"widgets": [{"type": "metric", "properties": {"metrics": [["VoiceAgent", "Stalls"]]}}]}'
    cw.PutDashboard({"DashboardName": "voice", "DashboardBody": body})
    assert cw.GetDashboard({"DashboardName": "voice"})["DashboardBody"] == body
    assert [d["DashboardName"] for d in cw.ListDashboards({})["DashboardEntries"]] == ["voice"]
    with pytest.raises(AwsError):
        cw.PutDashboard({"DashboardName": "bad", "DashboardBody": "{not json"})
    cw.DeleteDashboards({"DashboardNames": ["voice"]})
    with pytest.raises(AwsError) as err:
        cw.GetDashboard({"DashboardName": "voice"})
    assert err.value.code == "ResourceNotFound"


@pytest.mark.parametrize(
    ("period", "evaluation_periods", "taken"),
    [
        (60, 1_440, True),  # a day of minutes
        (60, 1_441, False),
        (1, 86_400, True),
        (10, 8_641, False),
        (3_600, 168, True),  # a week of hours
        (3_600, 169, False),
        (60, 50_000_000, False),
    ],
)
def test_period_times_evaluation_periods_is_bounded_as_aws_bounds_it(
    period: int, evaluation_periods: int, taken: bool
):
    """AWS: at most 604,800 s, and 86,400 s for periods under an hour. 50 million periods of a minute
    used to be taken, and evaluating them stalled the emulator 6 s of every second."""
    cw, _ = control()
    body = alarm(Period=period, EvaluationPeriods=evaluation_periods, DatapointsToAlarm=1)
    if taken:
        cw.PutMetricAlarm(body)
        cw.evaluate()
        assert state(cw) == "OK"  # notBreaching: every missing period counts as fine
    else:
        with pytest.raises(AwsError) as err:
            cw.PutMetricAlarm(body)
        assert err.value.code == "InvalidParameterValue" and "can't be more than" in err.value.message
        assert cw.alarms == {}


def test_the_longest_alarm_evaluates_its_86400_periods_at_once_and_names_the_newest_values():
    cw, clock = control()
    cw.PutMetricAlarm(
        alarm(Period=1, EvaluationPeriods=86_400, DatapointsToAlarm=3, TreatMissingData="missing")
    )
    for t in range(30):
        over(cw, T0 - 86_000 + t * 100, t + 1)
    cw.evaluate()
    described = cw.DescribeAlarms({"AlarmNames": ["sessions-over-capacity"]})["MetricAlarms"][0]
    assert described["StateValue"] == "ALARM"
    assert (
        "30 out of the last 86400 datapoints [..., 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]"
        in (described["StateReason"])
    )
    assert len(described["StateReason"]) <= 1023
    clock.now = T0 + 86_400
    cw.evaluate()
    assert state(cw) == "INSUFFICIENT_DATA"


def test_a_dashboard_nested_past_the_parser_is_refused_as_bad_input():
    cw, _ = control()
    with pytest.raises(AwsError) as err:
        cw.PutDashboard({"DashboardName": "deep", "DashboardBody": "[" * 100_000 + "]" * 100_000})
    assert err.value.code == "InvalidParameterValue"
    assert cw.dashboards == {}
