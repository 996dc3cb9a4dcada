"""A few trials summed up: median, min, max, and the median of paired ratios."""

from __future__ import annotations

from benchmarks.stats import median_ratio, spread


def test_a_few_trials_are_summed_up_as_median_min_max_and_paired_ratios() -> None:
    assert spread([0.3, 0.1004, 0.2]) == {"median": 0.2, "min": 0.1, "max": 0.3}
    # pairs (1/2, 3/2, 4/2): the median of the ratios, not the ratio of the medians (3/2)
    assert median_ratio([1.0, 3.0, 4.0], [2.0, 2.0, 2.0]) == 1.5
