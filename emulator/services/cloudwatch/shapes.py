"""CloudWatch's requests checked and typed: a metric's identity (namespace, name, dimensions), the
statistics it can be asked for, timestamps, and an alarm's definition, as the service constrains them."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emulator.services.cloudwatch.errors import combination, invalid, missing, not_emulated

STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d{1,10})?|100)$")
COMPARISONS = {
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}
TREAT_MISSING = ("missing", "notBreaching", "breaching", "ignore")
MAX_DIMENSIONS = 30  # CloudWatch's limit per metric


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


def number(body: Mapping[str, Any], member: str, *, default: float | None = None) -> float:
    value = body.get(member, default)
    if value is None:
        raise missing(member)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid(f"The parameter {member} must be a finite number.")
    return float(value)


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
        return AlarmDefinition(
            name, None, None, 60, evaluation_periods, datapoints, threshold, comparison, treat, dict(body)
        )  # type: ignore[arg-type]
    stats = [
        body.get(member) for member in ("Statistic", "ExtendedStatistic") if body.get(member) is not None
    ]
    if len(stats) != 1:
        raise combination("Exactly one of Statistic and ExtendedStatistic is required.")
    return AlarmDefinition(
        name,  # type: ignore[arg-type]
        metric_key(body),
        statistic(stats[0]),
        period(body),
        evaluation_periods,
        datapoints,
        threshold,
        comparison,  # type: ignore[arg-type]
        treat,
        dict(body),
    )
