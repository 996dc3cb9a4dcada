"""One metric's columns (emulator/services/cloudwatch/series.py): rows read in time order whatever order
they came in, the oldest dropped, and every statistic equal to CloudWatch's definition computed the
slow way (nearest rank over each period's values, weighted by their counts)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from emulator.services.cloudwatch.series import Datapoint, Periods, Series, point

PERCENTILES = ("p0", "p10", "p50", "p90", "p99", "p99.9", "p100")


def reference(points: list[Datapoint], stat: str) -> float | None:
    """CloudWatch's statistic over one period's datapoints, as the store computed it before numpy."""
    count = sum(p.count for p in points)
    if not points or count <= 0:
        return None
    if stat in ("Sum", "Average", "SampleCount", "Minimum", "Maximum"):
        total = sum(p.total for p in points)
        return {
            "Sum": total,
            "Average": total / count,
            "SampleCount": count,
            "Minimum": min(p.low for p in points),
            "Maximum": max(p.high for p in points),
        }[stat]
    if any(not p.values for p in points):
        return None
    ranked = sorted(pair for p in points for pair in p.values)
    rank = max(1.0, math.ceil(float(stat[1:]) / 100 * count))
    seen = 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= rank:
            return value
    return ranked[-1][0]


def shuffled_points(seed: int, n: int) -> list[Datapoint]:
    rnd = random.Random(seed)
    found = []
    for _ in range(n):
        t = 1_000.0 + rnd.randrange(0, 600) + rnd.choice((0.0, 0.5))
        if rnd.random() < 0.1:
            found.append(Datapoint(t, 40.0, 4.0, 5.0, 15.0, "Count"))  # a statistic set
        else:
            values = [
                (float(rnd.randrange(-50, 50)), float(rnd.randrange(0, 4)))
                for _ in range(rnd.randrange(1, 6))
            ]
            if all(c == 0 for _, c in values):
                values[0] = (values[0][0], 1.0)
            found.append(point(t, values, "Milliseconds"))
    return found


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("length", [1, 10, 60, 300])
def test_every_statistic_matches_cloudwatchs_definition_whatever_order_the_points_came_in(
    seed: int, length: int
):
    points = shuffled_points(seed, 400)
    series = Series()
    for datum in points:
        series.add(datum)
    periods = Periods(series.window(1_000.0, 1_600.0, values=True), length)
    by_period: dict[float, list[Datapoint]] = {}
    for datum in points:
        by_period.setdefault(math.floor(datum.t / length) * length, []).append(datum)
    assert periods.starts.tolist() == sorted(by_period)
    for stat in ("SampleCount", "Sum", "Average", "Minimum", "Maximum", *PERCENTILES):
        expected = [reference(by_period[t], stat) for t in sorted(by_period)]
        got = [None if math.isnan(v) else v for v in periods.column(stat).tolist()]
        assert got == pytest.approx(expected), stat


def test_rows_of_one_time_keep_their_order_of_arrival_and_the_unit_of_each_period_is_its_first():
    series = Series()
    series.add(point(130.0, [(1.0, 1.0)], "Seconds"))
    series.add(point(120.0, [(2.0, 1.0)], "Count"))
    series.add(point(120.0, [(3.0, 1.0)], "Bytes"))
    periods = Periods(series.window(0, 1_000, values=False), 60)
    assert periods.units() == ["Count"] and periods.units(last=True) == ["Seconds"]


def test_the_oldest_rows_are_dropped_by_age_and_beyond_the_newest_kept():
    series = Series()
    for t in range(100, 0, -1):  # newest first: every row out of order
        series.add(point(float(t), [(float(t), 1.0)], "None"))
    series.drop(before=11.0, keep=50)
    window = series.window(0, 1_000, values=True)
    assert window.floats[0].tolist() == [float(t) for t in range(51, 101)]
    assert window.pairs is not None and window.pairs[0].tolist() == [float(t) for t in range(51, 101)]
    series.drop(before=91.0, keep=50)
    assert len(series) == 10


def test_a_long_series_keeps_every_value_with_its_row_as_its_arrays_are_reused():
    """Dropping the oldest while appending moves rows and compacts values again and again."""
    series = Series()
    for t in range(5_000):
        series.add(point(float(t), [(float(t), 1.0), (float(-t), 2.0)], "None"))
        series.drop(before=t - 300.0, keep=1_000)
    window = series.window(0, 10_000, values=True)
    assert window.floats[0].tolist() == [float(t) for t in range(4_699, 5_000)]
    assert window.pairs is not None
    assert window.pairs[0].tolist() == [v for t in range(4_699, 5_000) for v in (float(t), float(-t))]
    assert series.floats.shape[1] <= 1_024 and series.pairs.shape[1] <= 4 * 1_024


def test_a_window_is_a_copy_that_later_writes_do_not_change():
    series = Series()
    for t in range(10):
        series.add(point(float(t), [(1.0, 1.0)], "None"))
    window = series.window(0, 100, values=True)
    series.add(point(5.5, [(100.0, 1.0)], "None"))
    series.drop(before=8.0, keep=100)
    assert Periods(window, None).column("Sum").tolist() == [10.0]
    assert np.isnan(Periods(series.window(100, 200, values=True), 60).column("p50")).all()
