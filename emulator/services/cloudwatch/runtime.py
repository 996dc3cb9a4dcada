"""CloudWatch's data plane: the metric store, filled by PutMetricData and by the EMF lines every replica
writes to its output (the emulator's CloudWatch Logs: on AWS, Logs extracts metrics from them), and read
by ListMetrics, GetMetricData and GetMetricStatistics with CloudWatch's statistics.

A datapoint keeps its values (EMF and PutMetricData `Value`/`Values`+`Counts`), so that percentiles are
exact over what was stored (nearest rank; CloudWatch's are estimates of the same); a `StatisticValues`
set keeps only its sum, count, minimum and maximum, as on AWS, and has no percentiles. Periods are
aligned to the epoch (`floor(t / period)`). Each metric keeps its last MAX_POINTS datapoints and
nothing older than RETENTION_S, so a long-running emulator stays bounded.

`LogMetrics` follows the replicas' log files (both runtimes write every replica's output to a file under
the emulator's home: the process runtime redirects it, the docker runtime copies the container's log
stream) and hands each complete line that is an EMF document to the store.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.services.cloudwatch.errors import invalid, missing
from emulator.services.cloudwatch.shapes import (
    PERCENTILE,
    MetricKey,
    dimensions,
    metric_key,
    period,
    statistic,
    text,
    timestamp,
)
from emulator.wire.awsjson import Operation

MAX_POINTS = 100_000
"""Datapoints kept per metric: a request line a second for a day."""
RETENTION_S = 24 * 3600
MAX_QUERIES = 500  # GetMetricData's limit per call
MAX_VALUES = 150  # PutMetricData's limit of Values per datum
MAX_DATA = 1000  # PutMetricData's limit of MetricData per call


@dataclass(frozen=True)
class Datapoint:
    t: float
    total: float
    count: float
    low: float
    high: float
    unit: str
    values: tuple[tuple[float, float], ...] = ()  # (value, count); empty for a statistic set


def _point(t: float, values: Iterable[tuple[float, float]], unit: str) -> Datapoint:
    pairs = tuple((float(v), float(c)) for v, c in values)
    return Datapoint(
        t,
        sum(v * c for v, c in pairs),
        sum(c for _, c in pairs),
        min(v for v, _ in pairs),
        max(v for v, _ in pairs),
        unit,
        pairs,
    )


def aggregate(points: list[Datapoint], stat: str) -> float | None:
    """One statistic over the datapoints of one period (None when it has none to give)."""
    count = sum(p.count for p in points)
    if not points or count <= 0:
        return None
    if stat == "SampleCount":
        return count
    if stat == "Sum":
        return sum(p.total for p in points)
    if stat == "Average":
        return sum(p.total for p in points) / count
    if stat == "Minimum":
        return min(p.low for p in points)
    if stat == "Maximum":
        return max(p.high for p in points)
    match = PERCENTILE.match(stat)
    if not match or any(not p.values for p in points):
        return None
    ranked = sorted(pair for p in points for pair in p.values)
    rank = max(1.0, math.ceil(float(match.group(1)) / 100 * count))  # nearest rank
    seen = 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= rank:
            return value
    return ranked[-1][0]


class Metrics:
    """The stored metrics and the data-plane operations over them."""

    def __init__(self, clock: Any = time.time) -> None:
        self._clock = clock
        self._series: dict[MetricKey, deque[Datapoint]] = {}

    def operations(self) -> dict[str, Operation]:
        return {
            "PutMetricData": self.PutMetricData,
            "ListMetrics": self.ListMetrics,
            "GetMetricData": self.GetMetricData,
            "GetMetricStatistics": self.GetMetricStatistics,
        }

    # storing ------------------------------------------------------------------------------------

    def put(self, key: MetricKey, point: Datapoint) -> None:
        series = self._series.setdefault(key, deque(maxlen=MAX_POINTS))
        series.append(point)
        horizon = self._clock() - RETENTION_S
        while series and series[0].t < horizon:
            series.popleft()

    def ingest_emf(self, line: str) -> int:
        """One log line: the metrics of an EMF document stored (0 when the line is not one)."""
        if '"_aws"' not in line:
            return 0
        try:
            doc = json.loads(line)
            directive = doc["_aws"]
            t = float(directive.get("Timestamp", self._clock() * 1000)) / 1000
            stored = 0
            for block in directive["CloudWatchMetrics"]:
                namespace = str(block["Namespace"])
                sets = block.get("Dimensions") or [[]]
                for metric in block["Metrics"]:
                    name = str(metric["Name"])
                    raw = doc[name]
                    values = raw if isinstance(raw, list) else [raw]
                    numbers = [(float(v), 1.0) for v in values if isinstance(v, int | float)]
                    if not numbers:
                        continue
                    for keys in sets:
                        dims = tuple(sorted((str(k), str(doc[k])) for k in keys))
                        self.put(
                            MetricKey(namespace, name, dims), _point(t, numbers, metric.get("Unit", "None"))
                        )
                        stored += 1
            return stored
        except (ValueError, KeyError, TypeError, AttributeError):
            return 0  # not EMF after all (a log line that mentions _aws): CloudWatch Logs ignores it too

    def metric_keys(self) -> list[MetricKey]:
        return sorted(self._series)

    def points(self, key: MetricKey, start: float, end: float) -> list[Datapoint]:
        return [p for p in self._series.get(key, ()) if start <= p.t < end]

    def periods(
        self, key: MetricKey, start: float, end: float, length: int, stat: str
    ) -> list[tuple[float, float]]:
        """(period start, statistic) for every period in [start, end) with data, oldest first."""
        buckets: dict[float, list[Datapoint]] = {}
        for point in self.points(key, start, end):
            buckets.setdefault(math.floor(point.t / length) * length, []).append(point)
        found = ((t, aggregate(points, stat)) for t, points in sorted(buckets.items()))
        return [(t, value) for t, value in found if value is not None]

    # operations ---------------------------------------------------------------------------------

    def PutMetricData(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = text(body, "Namespace")
        if namespace.startswith("AWS/"):  # type: ignore[union-attr]
            raise invalid("The value AWS/ for parameter Namespace is invalid: it is reserved for AWS.")
        data = body.get("MetricData")
        if not isinstance(data, list) or not data or len(data) > MAX_DATA:
            raise invalid(f"MetricData must be a list of 1 to {MAX_DATA} data.")
        now = self._clock()
        ready = [(metric_key(datum, namespace), self._datum(datum, now)) for datum in data]
        for key, point in ready:
            self.put(key, point)
        return {}

    @staticmethod
    def _datum(datum: Mapping[str, Any], now: float) -> Datapoint:
        t = timestamp(datum, "Timestamp", default=now)
        unit = datum.get("Unit", "None")
        given = [member for member in ("Value", "Values", "StatisticValues") if datum.get(member) is not None]
        if len(given) != 1:
            raise invalid("Each datum has exactly one of Value, Values and StatisticValues.")
        if given[0] == "Value":
            return _point(t, [(_finite(datum["Value"]), 1.0)], unit)
        if given[0] == "Values":
            values, counts = datum["Values"], datum.get("Counts") or [1.0] * len(datum["Values"])
            if (
                not isinstance(values, list)
                or not values
                or len(values) > MAX_VALUES
                or len(counts) != len(values)
            ):
                raise invalid(f"Values has 1 to {MAX_VALUES} numbers, and Counts (if given) as many.")
            return _point(t, [(_finite(v), _finite(c)) for v, c in zip(values, counts, strict=True)], unit)
        stats = datum["StatisticValues"]
        if not isinstance(stats, Mapping):
            raise invalid("StatisticValues has SampleCount, Sum, Minimum and Maximum.")
        try:
            return Datapoint(
                t,
                _finite(stats["Sum"]),
                _finite(stats["SampleCount"]),
                _finite(stats["Minimum"]),
                _finite(stats["Maximum"]),
                unit,
            )
        except KeyError as exc:
            raise missing(f"StatisticValues.{exc.args[0]}") from exc

    def ListMetrics(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = text(body, "Namespace", required=False)
        name = text(body, "MetricName", required=False)
        wanted = body.get("Dimensions") or []
        filters = [(d.get("Name"), d.get("Value")) for d in wanted if isinstance(d, Mapping)]
        found = [
            key.to_json()
            for key in self.metric_keys()
            if namespace in (None, key.namespace)
            and name in (None, key.name)
            and all(any(n == fn and (fv is None or v == fv) for n, v in key.dimensions) for fn, fv in filters)
        ]
        return {"Metrics": found}

    def GetMetricData(self, body: dict[str, Any]) -> dict[str, Any]:
        queries = body.get("MetricDataQueries")
        if not isinstance(queries, list) or not queries or len(queries) > MAX_QUERIES:
            raise invalid(f"MetricDataQueries must be a list of 1 to {MAX_QUERIES} queries.")
        start, end = timestamp(body, "StartTime"), timestamp(body, "EndTime")
        if end <= start:
            raise invalid("The parameter StartTime must be less than the parameter EndTime.")
        descending = body.get("ScanBy", "TimestampDescending") != "TimestampAscending"
        results = []
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
            series = self.periods(key, start, end, period(stat), statistic(stat.get("Stat")))
            if descending:
                series.reverse()
            if query.get("ReturnData", True) is False:
                continue
            results.append(
                {
                    "Id": qid,
                    "Label": query.get("Label") or key.name,
                    "Timestamps": [t for t, _ in series],
                    "Values": [v for _, v in series],
                    "StatusCode": "Complete",
                }
            )
        return {"MetricDataResults": results, "Messages": []}

    def GetMetricStatistics(self, body: dict[str, Any]) -> dict[str, Any]:
        key = metric_key(body)
        start, end = timestamp(body, "StartTime"), timestamp(body, "EndTime")
        length = period(body)
        stats = [statistic(s) for s in body.get("Statistics") or []]
        extended = [statistic(s) for s in body.get("ExtendedStatistics") or []]
        if not stats and not extended:
            raise missing("Statistics")
        points = []
        for t, _ in self.periods(key, start, end, length, "SampleCount"):
            point: dict[str, Any] = {"Timestamp": t, **{s: self._one(key, t, length, s) for s in stats}}
            if extended:
                point["ExtendedStatistics"] = {s: self._one(key, t, length, s) for s in extended}
            unit = self.points(key, t, t + length)[0].unit
            points.append({**point, "Unit": unit})
        return {"Label": key.name, "Datapoints": points}

    def _one(self, key: MetricKey, t: float, length: int, stat: str) -> float | None:
        return aggregate(self.points(key, t, t + length), stat)

    def summary(self, window_s: float) -> list[dict[str, Any]]:
        """Every metric with data in the last `window_s` seconds and its statistics over them (what
        `python -m emulator metrics` prints)."""
        now = self._clock()
        rows = []
        for key in self.metric_keys():
            points = self.points(key, now - window_s, now + 1)
            if not points:
                continue
            stats = {
                stat: aggregate(points, stat)
                for stat in ("SampleCount", "Average", "p50", "p90", "p99", "Maximum")
            }
            rows.append({**key.to_json(), "Unit": points[-1].unit, **stats})
        return rows

    def recent(self, namespace: str, name: str, stat: str, window_s: float, **dims: str) -> float | None:
        """One statistic of one metric over the last `window_s` seconds (what `emulator status` shows)."""
        now = self._clock()
        key = MetricKey(namespace, name, dimensions([{"Name": k, "Value": v} for k, v in dims.items()]))
        return aggregate(self.points(key, now - window_s, now + 1), stat)


def _finite(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid(f"{value!r} is not a finite number.")
    return float(value)


class LogMetrics:
    """Follows every replica's log file under `logs` and stores the EMF lines it finds."""

    def __init__(self, logs: Path, metrics: Metrics) -> None:
        self.logs = logs
        self.metrics = metrics
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}

    def poll(self) -> int:
        """Store the EMF lines each log gained since the last poll; return the metrics stored."""
        return sum(self.metrics.ingest_emf(line) for line in self.new_lines())

    def new_lines(self) -> list[str]:
        """The complete lines each log gained since the last call (file reads only: run off the loop,
        while the store is only touched on it)."""
        found: list[str] = []
        for path in sorted(self.logs.rglob("*.log")) if self.logs.is_dir() else []:
            offset = self._offsets.get(path, 0)
            try:
                with path.open("rb") as log:
                    log.seek(offset)
                    chunk = log.read()
            except OSError:
                continue
            self._offsets[path] = offset + len(chunk)
            *lines, rest = (self._partial.pop(path, b"") + chunk).split(b"\n")
            if rest:
                self._partial[path] = rest[-1_000_000:]  # a line over 1 MB is no EMF (256 KB at most)
            found += (line.decode(errors="replace") for line in lines if b'"_aws"' in line)
        return found

    async def run(self, interval_s: float) -> None:
        while True:
            for line in await asyncio.to_thread(self.new_lines):
                self.metrics.ingest_emf(line)
            await asyncio.sleep(interval_s)
