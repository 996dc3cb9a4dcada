"""CloudWatch's data plane: the metric store, filled by PutMetricData and by the EMF lines every replica
writes to its output (the emulator's CloudWatch Logs: on AWS, Logs extracts metrics from them), and read
by ListMetrics, GetMetricData and GetMetricStatistics with CloudWatch's statistics.

A datapoint keeps its values (EMF and PutMetricData `Value`/`Values`+`Counts`), so that percentiles are
exact over what was stored (nearest rank; CloudWatch's are estimates of the same); a `StatisticValues`
set keeps only its sum, count, minimum and maximum, as on AWS, and has no percentiles. Periods are
aligned to the epoch (`floor(t / period)`). Each metric keeps its last MAX_POINTS datapoints and
nothing older than RETENTION_S, so a long-running emulator stays bounded (a metric written out of time
order is trimmed when next read, or once it holds an eighth more). Each metric is a `Series`
(series.py): columns in time order, read by range and reduced with numpy.

Reads answer every other client meanwhile: a range of more than INLINE_LIMIT rows and values is
copied on the event loop and reduced on a worker thread (numpy's sorts and reductions let go of the
GIL), so a GetMetricData of 200 p99 queries over 100,000 datapoints no longer holds every other
CloudWatch client for its duration. A GetMetricData page holds at most MaxDatapoints (AWS's default,
100,800) datapoints, the rest behind a NextToken, and a GetMetricStatistics at most 1,440 (AWS's limit),
so no answer grows past a few megabytes of JSON.

`LogMetrics` follows the replicas' log files (both runtimes write every replica's output to a file under
the emulator's home: the process runtime redirects it, the docker runtime copies the container's log
stream) and hands each complete line that is an EMF document to the store.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from emulator.services.cloudwatch.errors import combination, invalid, missing
from emulator.services.cloudwatch.series import STATISTICS, Datapoint, Periods, Series, Window, point
from emulator.services.cloudwatch.shapes import (
    MetricKey,
    MetricQuery,
    datapoint,
    metric_data_request,
    metric_key,
    next_token,
    period,
    statistic,
    storable,
    text,
    timestamp,
    units,
)
from emulator.wire.awsjson import AsyncOperation, Operation

MAX_POINTS = 100_000
"""Datapoints kept per metric: a request line a second for a day."""
RETENTION_S = 24 * 3600
MAX_DATA = 1000  # PutMetricData's limit of MetricData per call
MAX_STATISTICS_POINTS = 1440  # GetMetricStatistics's limit of datapoints per call
INLINE_LIMIT = 20_000
"""Rows and values a read reduces on the event loop (about a millisecond); more go to a worker thread."""
SUMMARY = ("SampleCount", "Average", "p50", "p90", "p99", "Maximum")


class Metrics:
    """The stored metrics and the data-plane operations over them."""

    def __init__(self, clock: Any = time.time) -> None:
        self._clock = clock
        self._series: dict[MetricKey, Series] = {}

    def operations(self) -> dict[str, Operation | AsyncOperation]:
        return {
            "PutMetricData": self.PutMetricData,
            "ListMetrics": self.ListMetrics,
            "GetMetricData": self.GetMetricData,
            "GetMetricStatistics": self.GetMetricStatistics,
        }

    # storing ------------------------------------------------------------------------------------

    def put(self, key: MetricKey, datum: Datapoint) -> None:
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = Series()
        series.add(datum)
        if series.ordered or len(series) > MAX_POINTS + MAX_POINTS // 8:  # else: when next read
            series.drop(self._clock() - RETENTION_S, MAX_POINTS)

    def ingest_emf(self, line: str) -> int:
        """One log line: the metrics of an EMF document stored (0 when the line is not one). Values
        CloudWatch would refuse (not finite, beyond 2^360) are left out, and a unit it does not know
        is stored as `None`, so that nothing a replica prints breaks a later read."""
        if '"_aws"' not in line:
            return 0
        try:
            doc = json.loads(line)
            directive = doc["_aws"]
            t = float(directive.get("Timestamp", self._clock() * 1000)) / 1000
            if not math.isfinite(t):
                return 0
            stored = 0
            for block in directive["CloudWatchMetrics"]:
                namespace = str(block["Namespace"])
                sets = block.get("Dimensions") or [[]]
                for metric in block["Metrics"]:
                    name = str(metric["Name"])
                    raw = doc[name]
                    stored_values = (storable(v) for v in (raw if isinstance(raw, list) else [raw]))
                    numbers = [(v, 1.0) for v in stored_values if v is not None]
                    if not numbers:
                        continue
                    unit = metric.get("Unit", "None")
                    unit = unit if isinstance(unit, str) and unit in units() else "None"
                    for keys in sets:
                        dims = tuple(sorted((str(k), str(doc[k])) for k in keys))
                        self.put(MetricKey(namespace, name, dims), point(t, numbers, unit))
                        stored += 1
            return stored
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError):
            return 0  # not EMF after all (a log line that mentions _aws): CloudWatch Logs ignores it too

    def metric_keys(self) -> list[MetricKey]:
        return sorted(self._series)

    # reading ------------------------------------------------------------------------------------

    def window(self, key: MetricKey, start: float, end: float, values: bool) -> Window:
        """A copy of `key`'s datapoints in [start, end) (with their values, for percentiles)."""
        series = self._series.get(key)
        if series is None:
            return Series(capacity=1).window(start, end, values)
        series.drop(self._clock() - RETENTION_S, MAX_POINTS)
        return series.window(start, end, values)

    def periods(self, key: MetricKey, start: float, end: float, length: float | None, stat: str) -> Periods:
        """`key`'s datapoints in [start, end) by periods of `length` s (None: one period), ready for
        `stat`, computed on this thread (the alarms, `emulator status`: a few periods)."""
        return Periods(self.window(key, start, end, stat not in STATISTICS), length)

    @staticmethod
    async def compute[R](periods: Periods, work: Callable[[], R]) -> R:
        """`work` over `periods`: on the event loop for a small window, on a worker thread for one of
        more than INLINE_LIMIT rows and values, so that no other client waits for it."""
        if periods.window.size <= INLINE_LIMIT:
            return work()
        return await asyncio.to_thread(work)

    # operations ---------------------------------------------------------------------------------

    def PutMetricData(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = text(body, "Namespace")
        if namespace.startswith("AWS/"):  # type: ignore[union-attr]
            raise invalid("The value AWS/ for parameter Namespace is invalid: it is reserved for AWS.")
        data = body.get("MetricData")
        if not isinstance(data, list) or not data or len(data) > MAX_DATA:
            raise invalid(f"MetricData must be a list of 1 to {MAX_DATA} data.")
        now = self._clock()
        ready = []
        for datum in data:
            if not isinstance(datum, Mapping):
                raise invalid("Each datum is an object.")
            ready.append((metric_key(datum, namespace), datapoint(datum, now)))
        for key, datum in ready:
            self.put(key, datum)
        return {}

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

    async def GetMetricData(self, body: dict[str, Any]) -> dict[str, Any]:
        """Each query's periods, newest first unless ScanBy says otherwise. A metric is copied once for
        all its queries, and a metric and period read once for all its statistics. A page ends after
        MaxDatapoints datapoints, with a NextToken for the rest."""
        request = metric_data_request(body)
        first, after = request.resume
        percentiles = {q.key for q in request.queries[first:] if q.stat not in STATISTICS}
        windows: dict[MetricKey, Window] = {}
        grouped: dict[tuple[MetricKey, int], Periods] = {}
        results: list[dict[str, Any]] = []
        budget, token = request.max_datapoints, None
        for index in range(first, len(request.queries)):
            query = request.queries[index]
            boundary = after if index == first else None
            if not query.returned:
                continue
            if not budget:
                token = next_token(index, boundary)
                break
            if query.key not in windows:
                windows[query.key] = self.window(
                    query.key, request.start, request.end, query.key in percentiles
                )
            periods = grouped.setdefault((query.key, query.period), Periods(windows[query.key], query.period))
            series = await self.compute(periods, functools.partial(periods.series, query.stat))
            if request.descending:
                series.reverse()
            if boundary is not None:
                series = [p for p in series if (p[0] < boundary if request.descending else p[0] > boundary)]
            results.append(_result(query, series[:budget], len(series) > budget))
            if len(series) > budget:
                token = next_token(index, series[budget - 1][0])
                break
            budget -= len(series)
        return {"MetricDataResults": results, "Messages": [], **({"NextToken": token} if token else {})}

    async def GetMetricStatistics(self, body: dict[str, Any]) -> dict[str, Any]:
        key = metric_key(body)
        start, end = timestamp(body, "StartTime"), timestamp(body, "EndTime")
        if end <= start:
            raise invalid("The parameter StartTime must be less than the parameter EndTime.")
        length = period(body)
        stats = [statistic(s) for s in _names(body, "Statistics")]
        extended = [statistic(s) for s in _names(body, "ExtendedStatistics")]
        if not stats and not extended:
            raise missing("Statistics")
        requested = math.ceil((end - start) / length)
        if requested > MAX_STATISTICS_POINTS:
            raise combination(
                f"You have requested up to {requested:,} datapoints, which exceeds the limit of "
                f"{MAX_STATISTICS_POINTS:,}. You may reduce the datapoints requested by increasing Period, "
                "or decreasing the time range."
            )
        periods = Periods(self.window(key, start, end, bool(extended)), length)

        def points() -> list[dict[str, Any]]:
            found = []
            for index, (t, unit) in enumerate(zip(periods.starts.tolist(), periods.units(), strict=True)):
                if periods.count[index] > 0:
                    point_: dict[str, Any] = {"Timestamp": t, **_present(periods, stats, index)}
                    if extended:
                        point_["ExtendedStatistics"] = _present(periods, extended, index)
                    found.append({**point_, "Unit": unit})
            return found

        return {"Label": key.name, "Datapoints": await self.compute(periods, points)}

    async def summary(self, window_s: float) -> list[dict[str, Any]]:
        """Every metric with data in the last `window_s` seconds and its statistics over them (what
        `python -m emulator metrics` prints)."""
        now = self._clock()
        rows = []
        for key in self.metric_keys():
            whole = Periods(self.window(key, now - window_s, now + 1, True), None)
            if len(whole.marks):
                row = await self.compute(whole, functools.partial(_present, whole, SUMMARY, 0, None))
                rows.append({**key.to_json(), "Unit": whole.units(last=True)[0], **row})
        return rows

    def recent(self, key: MetricKey, stat: str, window_s: float) -> float | None:
        """One statistic of one metric over the last `window_s` seconds (what `emulator status` shows of
        a dashboard's metric)."""
        now = self._clock()
        whole = self.periods(key, now - window_s, now + 1, None, stat)
        return _present(whole, [stat], 0, None)[stat] if len(whole.marks) else None


def _result(query: MetricQuery, series: list[tuple[float, float]], partial: bool) -> dict[str, Any]:
    return {
        "Id": query.id,
        "Label": query.label,
        "Timestamps": [t for t, _ in series],
        "Values": [v for _, v in series],
        "StatusCode": "PartialData" if partial else "Complete",
    }


def _names(body: Mapping[str, Any], member: str) -> list[Any]:
    value = body.get(member) or []
    if not isinstance(value, list):
        raise invalid(f"The parameter {member} is a list of statistics.")
    return value


_ABSENT = object()


def _present(periods: Periods, stats: Sequence[str], index: int, missing: Any = _ABSENT) -> dict[str, Any]:
    """The statistics period `index` has (each it has not left out, or given as `missing`)."""
    out = {}
    for stat in stats:
        value = float(periods.column(stat)[index])
        if not math.isnan(value):
            out[stat] = value
        elif missing is not _ABSENT:
            out[stat] = missing
    return out


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
