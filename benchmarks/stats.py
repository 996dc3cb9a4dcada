"""Summaries of latency samples: one definition of mean, median and percentiles for every study."""

from __future__ import annotations

import math
import statistics


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
