"""CloudWatch's requests checked and typed: a metric's identity (namespace, name, dimensions), a datum's
values, the statistics it can be asked for, timestamps, GetMetricData's queries and pages, and an
alarm's definition, as the service constrains them.

Every number a datum carries is within CloudWatch's range, -2^360 to 2^360 (PutMetricData's reference:
"CloudWatch rejects values that are either too small or too large"), so every statistic the store
computes stays finite: sums of up to 150 values times counts of up to 2^360, over 100,000 datapoints,
stay below 1e224, where a double overflows at 1.8e308. Two values of 1.7e308 used to sum to Infinity,
which the JSON answer wrote as a bare `Infinity` that no JSON parser reads."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emulator.services.cloudwatch.errors import bad_token, combination, invalid, missing, not_emulated
from emulator.services.cloudwatch.series import STATISTICS, Datapoint, point
from emulator.wire.validation import service_model

PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d{1,10})?|100)$")
COMPARISONS = {
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}
TREAT_MISSING = ("missing", "notBreaching", "breaching", "ignore")
MAX_DIMENSIONS = 30  # CloudWatch's limit per metric
VALUE_LIMIT = 2.0**360
MAX_VALUES = 150  # PutMetricData's limit of Values per datum
MAX_QUERIES = 500  # GetMetricData's limit per call
MAX_DATAPOINTS = 100_800  # GetMetricData's default MaxDatapoints: a page's datapoints, all queries together
MAX_ALARM_SPAN_S = 604_800  # Period x EvaluationPeriods: a week, and a day for periods under an hour
MAX_SHORT_ALARM_SPAN_S = 86_400


@dataclass(frozen=True, order=True)
class MetricKey:
    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "Namespace": self.namespace,
            "MetricName": self.name,
            "Dimensions": [{"Name": n, "Value": v} for n, v in self.dimensions],
        }


def text(body: Mapping[str, Any], member: str, *, required: bool = True, limit: int = 255) -> str | None:
    value = body.get(member)
    if value is None:
        if required:
            raise missing(member)
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise invalid(f"The parameter {member} must be a string of 1 to {limit} characters.")
    return value


def dimensions(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_DIMENSIONS:
        raise invalid(f"Dimensions must be a list of at most {MAX_DIMENSIONS} name/value pairs.")
    pairs = {}
    for item in value:
        if not isinstance(item, Mapping):
            raise invalid("Each dimension is an object with Name and Value.")
        name, val = text(item, "Name"), text(item, "Value", limit=1024)
        pairs[name] = val
    return tuple(sorted(pairs.items()))  # type: ignore[arg-type]


def metric_key(body: Mapping[str, Any], namespace: str | None = None) -> MetricKey:
    return MetricKey(
        namespace or text(body, "Namespace"),  # type: ignore[arg-type]
        text(body, "MetricName"),  # type: ignore[arg-type]
        dimensions(body.get("Dimensions")),
    )


def timestamp(body: Mapping[str, Any], member: str, default: float | None = None) -> float:
    """Seconds since the epoch: botocore's JSON protocol sends a number, the query protocol ISO 8601."""
    value = body.get(member)
    if value is None:
        if default is None:
            raise missing(member)
        return default
    if isinstance(value, bool):
        raise invalid(f"{member} is not a timestamp.")
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)).timestamp()
    raise invalid(f"{member} is not a timestamp: {value!r}.")


def _float(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (a 400-digit integer included)."""
    kind = type(value)  # not isinstance: a bool is no number here (a datum's values come by the thousand)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is not int:
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def number(body: Mapping[str, Any], member: str, *, default: float | None = None) -> float:
    value = body.get(member, default)
    if value is None:
        raise missing(member)
    number = _float(value)
    if number is None:
        raise invalid(f"The parameter {member} must be a finite number.")
    return number


def storable(value: Any) -> float | None:
    """`value` as CloudWatch stores it: a finite number within -2^360 to 2^360 (None for anything else)."""
    number = _float(value)
    return number if number is not None and abs(number) <= VALUE_LIMIT else None


def metric_value(value: Any, member: str) -> float:
    """A number a datum carries, or CloudWatch's refusal of it."""
    number = storable(value)
    if number is None:
        raise invalid(f"The value of {member} must be a number from -2^360 to 2^360.")
    return number


@functools.cache
def units() -> frozenset[str]:
    """CloudWatch's units, as its model names them (StandardUnit)."""
    return frozenset(service_model("cloudwatch").shape_for("StandardUnit").enum)


def datapoint(datum: Mapping[str, Any], now: float) -> Datapoint:
    """One MetricDatum: exactly one of Value, Values (with Counts) and StatisticValues."""
    t = timestamp(datum, "Timestamp", default=now)
    unit = datum.get("Unit") or "None"
    if not isinstance(unit, str) or unit not in units():
        raise invalid(f"The parameter Unit must be one of {', '.join(sorted(units()))}.")
    given = [member for member in ("Value", "Values", "StatisticValues") if datum.get(member) is not None]
    if len(given) != 1:
        raise invalid("Each datum has exactly one of Value, Values and StatisticValues.")
    if given[0] == "Value":
        return point(t, [(metric_value(datum["Value"], "Value"), 1.0)], unit)
    if given[0] == "Values":
        values, counts = datum["Values"], datum.get("Counts") or [1.0] * _length(datum["Values"])
        if not 1 <= _length(values) <= MAX_VALUES or _length(counts) != len(values):
            raise invalid(f"Values has 1 to {MAX_VALUES} numbers, and Counts (if given) as many.")
        pairs = [
            (metric_value(v, "Values"), metric_value(c, "Counts"))
            for v, c in zip(values, counts, strict=True)
        ]
        if any(c < 0 for _, c in pairs):
            raise invalid("Counts are how often each value occurred: none is negative.")
        return point(t, pairs, unit)
    stats = datum["StatisticValues"]
    if not isinstance(stats, Mapping):
        raise invalid("StatisticValues has SampleCount, Sum, Minimum and Maximum.")
    try:
        total, count, low, high = (
            metric_value(stats[m], f"StatisticValues.{m}")
            for m in ("Sum", "SampleCount", "Minimum", "Maximum")
        )
    except KeyError as exc:
        raise missing(f"StatisticValues.{exc.args[0]}") from exc
    if count < 0:
        raise invalid("StatisticValues.SampleCount is a count: not negative.")
    return Datapoint(t, total, count, low, high, unit)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else -1


def period(body: Mapping[str, Any], member: str = "Period") -> int:
    """1, 5, 10, 20, 30 (high resolution) or a multiple of 60 seconds, as CloudWatch takes it."""
    value = body.get(member)
    if value is None:
        raise missing(member)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid(f"The parameter {member} must be a positive integer.")
    if value not in (1, 5, 10, 20, 30) and value % 60:
        raise invalid(f"The parameter {member} must be 1, 5, 10, 20, 30 or a multiple of 60.")
    return value


def statistic(name: Any) -> str:
    if name in STATISTICS or (isinstance(name, str) and PERCENTILE.match(name)):
        return name
    if isinstance(name, str) and re.match(r"^(tm|tc|ts|wm|pr|TM|TC|TS|WM|PR|IQM)", name):
        raise not_emulated(f"The statistic {name}")
    raise invalid(f"The statistic {name!r} is not one of {', '.join(STATISTICS)} or a percentile pNN.")


@dataclass(frozen=True)
class MetricQuery:
    """One of GetMetricData's MetricStat queries."""

    id: str
    label: str
    key: MetricKey
    period: int
    stat: str
    returned: bool


@dataclass(frozen=True)
class MetricDataRequest:
    """GetMetricData, typed; `resume` is where its NextToken says the page starts: the index of a query
    and the last period of it already given (None: from its first)."""

    queries: list[MetricQuery]
    start: float
    end: float
    descending: bool
    max_datapoints: int
    resume: tuple[int, float | None] = (0, None)


def metric_data_request(body: Mapping[str, Any]) -> MetricDataRequest:
    queries = body.get("MetricDataQueries")
    if not isinstance(queries, list) or not 1 <= len(queries) <= MAX_QUERIES:
        raise invalid(f"MetricDataQueries must be a list of 1 to {MAX_QUERIES} queries.")
    start, end = timestamp(body, "StartTime"), timestamp(body, "EndTime")
    if end <= start:
        raise invalid("The parameter StartTime must be less than the parameter EndTime.")
    typed = []
    for query in queries:
        if not isinstance(query, Mapping):
            raise invalid("Each query is an object.")
        qid = text(query, "Id")
        if query.get("Expression") is not None:
            raise invalid(f"Query {qid}: metric math expressions are not emulated; use MetricStat.")
        stat = query.get("MetricStat")
        if not isinstance(stat, Mapping) or not isinstance(stat.get("Metric"), Mapping):
            raise missing(f"MetricDataQueries.{qid}.MetricStat")
        key = metric_key(stat["Metric"])
        label = query.get("Label") or key.name
        returned = query.get("ReturnData", True) is not False
        typed.append(MetricQuery(qid, label, key, period(stat), statistic(stat.get("Stat")), returned))  # type: ignore[arg-type]
    limit = body.get("MaxDatapoints", MAX_DATAPOINTS)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise invalid("The parameter MaxDatapoints must be a positive integer.")
    descending = body.get("ScanBy", "TimestampDescending") != "TimestampAscending"
    resume = page(body.get("NextToken"), len(typed))
    return MetricDataRequest(typed, start, end, descending, limit, resume)


def next_token(query: int, after: float | None) -> str:
    """The NextToken of a page that ended in query `query`, after its period `after` (None: before
    its first)."""
    return base64.urlsafe_b64encode(json.dumps([query, after]).encode()).decode()


def page(token: Any, queries: int) -> tuple[int, float | None]:
    """Where a NextToken says the page starts (the first page without one)."""
    if token is None:
        return 0, None
    try:
        query, after = json.loads(base64.urlsafe_b64decode(str(token).encode()))
    except (ValueError, TypeError, RecursionError, binascii.Error) as exc:
        raise bad_token() from exc
    valid_after = after is None or (_float(after) is not None)
    if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < queries or not valid_after:
        raise bad_token()
    return query, after


@dataclass
class AlarmDefinition:
    """PutMetricAlarm's request, typed (one metric; metric math alarms are stored but not evaluated)."""

    name: str
    metric: MetricKey | None
    stat: str | None
    period: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing: str
    request: dict[str, Any] = field(default_factory=dict)


def alarm_definition(body: Mapping[str, Any]) -> AlarmDefinition:
    name = text(body, "AlarmName")
    comparison = text(body, "ComparisonOperator")
    if comparison not in COMPARISONS:
        raise not_emulated(f"The comparison operator {comparison}")
    evaluation_periods = int(number(body, "EvaluationPeriods"))
    datapoints = int(number(body, "DatapointsToAlarm", default=evaluation_periods))
    if evaluation_periods < 1 or not 1 <= datapoints <= evaluation_periods:
        raise invalid("EvaluationPeriods must be at least 1 and DatapointsToAlarm between 1 and it.")
    treat = body.get("TreatMissingData", "missing")
    if treat not in TREAT_MISSING:
        raise invalid(f"TreatMissingData must be one of {', '.join(TREAT_MISSING)}.")
    threshold = number(body, "Threshold")
    if body.get("Metrics") is not None:
        if body.get("MetricName") is not None:
            raise combination("Use either MetricName or Metrics, not both.")
        length = _math_period(body["Metrics"])
        _alarm_span(length, evaluation_periods)
        return AlarmDefinition(
            name, None, None, length, evaluation_periods, datapoints, threshold, comparison, treat, dict(body)
        )  # type: ignore[arg-type]
    stats = [
        body.get(member) for member in ("Statistic", "ExtendedStatistic") if body.get(member) is not None
    ]
    if len(stats) != 1:
        raise combination("Exactly one of Statistic and ExtendedStatistic is required.")
    length = period(body)
    _alarm_span(length, evaluation_periods)
    return AlarmDefinition(
        name,  # type: ignore[arg-type]
        metric_key(body),
        statistic(stats[0]),
        length,
        evaluation_periods,
        datapoints,
        threshold,
        comparison,  # type: ignore[arg-type]
        treat,
        dict(body),
    )


def _alarm_span(length: int, evaluation_periods: int) -> None:
    """AWS's rule (PutMetricAlarm's Period): "Period multiplied by EvaluationPeriods can't be more than
    604,800 seconds; for alarms with a period of less than one hour (3,600 seconds), the total
    evaluation period can't be longer than one day (86,400 seconds)". It also bounds what an evaluation
    reads: at most 86,400 periods (of 1 s); 50 million periods took 6 s of every second."""
    limit = MAX_SHORT_ALARM_SPAN_S if length < 3600 else MAX_ALARM_SPAN_S
    if length * evaluation_periods > limit:
        raise invalid(
            f"Period multiplied by EvaluationPeriods ({length:,} s x {evaluation_periods:,} = "
            f"{length * evaluation_periods:,} s) can't be more than {limit:,} seconds for a period "
            f"{'under' if length < 3600 else 'of at least'} one hour."
        )


def _math_period(metrics: Any) -> int:
    """A metric math alarm's period: the longest of its metrics' (60 s when none names one)."""
    periods = [
        query["MetricStat"].get("Period")
        for query in (metrics if isinstance(metrics, list) else [])
        if isinstance(query, Mapping) and isinstance(query.get("MetricStat"), Mapping)
    ]
    return max([p for p in periods if isinstance(p, int) and not isinstance(p, bool) and p > 0] or [60])
