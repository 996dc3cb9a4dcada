"""Timing for the tests that bound how work grows with its input (the text rules, the word mapping):
the fastest of a few runs, so one run slowed by the machine does not decide, with the garbage collector
off while they run, as `timeit` has it: a rule that calls Python per match (10,000 matches in 20,000
characters of "# ") allocates enough to set off a full collection in one run and not in another, and
CI once measured 2.39 -> 25.21 ms for a 4x longer input that takes 4.2 -> 17.4 ms here."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_of(run: Callable[[], object], times: int = 3) -> float:
    """Seconds of the fastest of `times` calls of `run`."""
    spent = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in range(times):
            started = time.perf_counter()
            run()
            spent.append(time.perf_counter() - started)
    finally:
        if collecting:
            gc.enable()
    return min(spent)
