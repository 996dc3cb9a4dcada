"""Summaries of latency samples: one definition of mean, median and percentiles for every study.

`summarize` is for the many samples of a latency distribution (milliseconds, with percentiles);
`spread` for the few alternating trials of a container study (seconds: median, min and max);
`median_ratio` compares two cases measured in alternation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in 0..1)."""
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def summarize(values_ms: list[float]) -> dict[str, float]:
    if not values_ms:
        return {"count": 0}
    ordered = sorted(values_ms)
    return {
        "count": len(ordered),
        "mean_ms": round(statistics.fmean(ordered), 3),
        "median_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(percentile(ordered, 0.9), 3),
        "p95_ms": round(percentile(ordered, 0.95), 3),
        "p99_ms": round(percentile(ordered, 0.99), 3),
        "min_ms": round(ordered[0], 3),
        "max_ms": round(ordered[-1], 3),
    }


def spread(values_s: Sequence[float]) -> dict[str, float]:
    """Median, min and max of a few trials in seconds, to the millisecond."""
    return {
        "median": round(statistics.median(values_s), 3),
        "min": round(min(values_s), 3),
        "max": round(max(values_s), 3),
    }


def median_ratio(ours: Sequence[float], theirs: Sequence[float]) -> float:
    """The median of trial-by-trial ratios (trials alternate, so each pair shares the machine's noise)."""
    return round(statistics.median(o / t for o, t in zip(ours, theirs, strict=True)), 3)
