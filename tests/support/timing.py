"""Timing for the tests that bound how work grows with its input (the text rules, the word mapping):
the fastest of a few runs, so one run slowed by the machine does not decide."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(run: Callable[[], object], times: int = 3) -> float:
    """Seconds of the fastest of `times` calls of `run`."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return min(spent)
