"""How many threads the local model computes on, from the cores this process may use.

On the local stack the model and Kokoro share the same cores, and only Kokoro is real-time: a listener
hears a gap when a window is late, a reader does not notice a token 20 ms late. So the model gets one
thread per four cores, at least one: on 2 cores it holds at most one of them, and only while it writes
(an 80-token answer at 82 tokens/s on one VNNI thread is about 1 s, 2-3 s on AVX2), leaving the other to
speech; with one thread onnxruntime computes on the calling thread, no spinning pool that burns the
other core. `EMULATOR_LLM_THREADS` > 0 overrides it.
"""

from __future__ import annotations

import os

CORES_PER_THREAD = 4


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; a container's cpuset counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_budget(configured: int = 0, cores: int | None = None) -> int:
    """`configured` when > 0, else one thread per CORES_PER_THREAD cores (at least one)."""
    if configured > 0:
        return configured
    return max(1, (cores if cores is not None else usable_cores()) // CORES_PER_THREAD)
