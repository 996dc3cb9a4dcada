"""What the status shows of the dashboards the emulator's CloudWatch holds: each metric widget's
metrics, each with its latest value (its statistic over the last period of its own length, ending now).

The emulator knows no product's metrics: what the status shows is what was put into its CloudWatch, by
a stack (CloudFormation's `AWS::CloudWatch::Dashboard` is a PutDashboard) or by the manifest (`kind:
Dashboard`, whose spec is the PutDashboard request). A dashboard body is CloudWatch's own JSON: widgets
of `type: metric` list `properties.metrics`, each row `[namespace, name, dimension, value, ...,
{options}]` (`stat`, `period`, `label`, `visible`), the widget's `stat` and `period` the defaults
(CloudWatch's own: Average, 300 s). In a row, "." is the previous row's entry at that place, and a
leading "..." the previous row's entries up to the ones that follow it, as the console writes them.
Left out: metric math (the emulator evaluates no expression for its status), hidden rows (`visible:
false`, an expression's inputs), and widgets without metrics (text, alarms, logs). A row the emulator
cannot read shows why, in place of its value: a body is whatever a client put.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from emulator.services.cloudwatch.runtime import Metrics
from emulator.services.cloudwatch.shapes import MetricKey, metric_key, statistic
from emulator.wire.awserrors import AwsError

DEFAULT_STAT = "Average"
DEFAULT_PERIOD_S = 300
"""CloudWatch's defaults for a dashboard metric that names no statistic or period."""


class UnreadRow(ValueError):
    """A metrics row that is not one CloudWatch would graph."""


@dataclass(frozen=True)
class DashboardMetric:
    key: MetricKey
    stat: str
    period_s: int
    label: str


def _expand(names: list[Any], previous: list[Any]) -> list[Any]:
    """A row's namespace, name and dimensions with CloudWatch's shorthand spelled out."""
    if names[:1] == ["..."]:
        kept = len(previous) - (len(names) - 1)
        if kept < 0:
            raise UnreadRow("'...' repeats more entries than the previous row has")
        names = [*previous[:kept], *names[1:]]
    expanded = []
    for place, name in enumerate(names):
        if name == ".":
            if place >= len(previous):
                raise UnreadRow("'.' has no entry of the previous row at its place")
            name = previous[place]
        expanded.append(name)
    return expanded


def _metric(names: list[Any], options: Mapping[str, Any], widget: Mapping[str, Any]) -> DashboardMetric:
    if len(names) < 2 or len(names) % 2:
        raise UnreadRow("a row is a namespace, a metric name and dimension name/value pairs")
    pairs = zip(names[2::2], names[3::2], strict=True)
    try:
        key = metric_key(
            {
                "Namespace": names[0],
                "MetricName": names[1],
                "Dimensions": [{"Name": n, "Value": v} for n, v in pairs],
            }
        )
        stat = statistic(options.get("stat", widget.get("stat", DEFAULT_STAT)))
    except AwsError as err:
        raise UnreadRow(err.message) from err
    period = options.get("period", widget.get("period", DEFAULT_PERIOD_S))
    if isinstance(period, bool) or not isinstance(period, int) or period < 1:
        raise UnreadRow(f"the period {period!r:.40} is not a whole number of seconds")
    label = options.get("label")
    return DashboardMetric(key, stat, period, str(label) if label else f"{key.namespace} {key.name}")


def widget_metrics(widget: Mapping[str, Any]) -> list[DashboardMetric | UnreadRow]:
    """The rows of a metric widget's `properties` to show: a metric, or why a row cannot be read."""
    rows = widget.get("metrics")
    shown: list[DashboardMetric | UnreadRow] = []
    previous: list[Any] = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, list) or not row:
            shown.append(UnreadRow("a row is a list"))
            continue
        options = row[-1] if isinstance(row[-1], Mapping) else {}
        if "expression" in options or options.get("visible") is False:
            continue
        try:
            previous = _expand(row[:-1] if options else row, previous)
            shown.append(_metric(previous, options, widget))
        except UnreadRow as exc:
            shown.append(exc)
    return shown


def _row(metrics: Metrics, metric: DashboardMetric | UnreadRow) -> dict[str, Any]:
    if isinstance(metric, UnreadRow):
        return {"label": "?", "unread": str(metric)}
    return {
        "label": metric.label,
        **metric.key.to_json(),
        "stat": metric.stat,
        "period_s": metric.period_s,
        "value": metrics.recent(metric.key, metric.stat, metric.period_s),
    }


def dashboard_status(name: str, body: str, metrics: Metrics) -> dict[str, Any]:
    """One dashboard as the status shows it: its metric widgets, each row with its latest value."""
    widgets = json.loads(body).get("widgets") or []  # PutDashboard kept only JSON objects
    shown = []
    for widget in widgets:
        properties = widget.get("properties") if isinstance(widget, Mapping) else None
        if not isinstance(properties, Mapping) or widget.get("type") != "metric":
            continue
        rows = [_row(metrics, metric) for metric in widget_metrics(properties)]
        if rows:
            shown.append({"title": str(properties.get("title") or ""), "metrics": rows})
    return {"name": name, "widgets": shown}
