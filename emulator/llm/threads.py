"""How many threads the local model computes on, from the cores this process may use.

On the local stack the model and Kokoro share the same cores, and only Kokoro is real-time: a listener
hears a gap when a window is late, a reader does not notice a token 20 ms late. So the model gets one
thread per four cores, at least one: on 2 cores it holds at most one of them, and only while it writes
(an 80-token answer at 82 tokens/s on one VNNI thread is about 1 s, 2-3 s on AVX2), leaving the other to
speech; with one thread onnxruntime computes on the calling thread, no spinning pool that burns the
other core. `EMULATOR_LLM_THREADS` > 0 overrides it.

And the decoder thread runs YIELD_NICE below the process (`yield_to_speech`): a token is never worth
a late window of speech.
"""

from __future__ import annotations

import logging
import os
import threading

CORES_PER_THREAD = 4
# When the model's thread and Kokoro's want the same core, the kernel's scheduler (CFS) shares it by
# weight: nice 10 weighs 110 against nice 0's 1,024, so the model gets about a tenth of it while speech
# computes and the whole core while speech waits, which is most of the time (the replica computes audio
# 4-5x faster than it plays on 2 VNNI cores). A listener hears a late window; a reader does not notice
# a late token.
YIELD_NICE = 10

logger = logging.getLogger("emulator.llm")


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


def yield_to_speech() -> None:
    """Lower the calling thread's scheduling priority by YIELD_NICE (Linux schedules each thread as its
    own task; where that is refused or not supported, it logs why and nothing changes)."""
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + YIELD_NICE))
    except (AttributeError, OSError) as exc:
        logger.warning("the local model's thread keeps its priority (%s): speech may wait for it", exc)
