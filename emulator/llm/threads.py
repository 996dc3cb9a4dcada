"""How many threads the local model computes on, from the cores this process may use, and how it yields
them to speech.

On the local stack the model and Kokoro share the same cores, and only Kokoro is real-time: a listener
hears a gap when a window is late, a reader does not notice a token 20 ms late. So the model always runs
below speech: its decoder thread YIELD_NICE below the process (`yield_to_speech`), and the
onnxruntime-genai worker, a process of its own, in a session of its own whose group runs YIELD_NICE
below the replicas (`yield_process_to_speech`): where the kernel groups tasks by session, a nice weighs
only inside its own session.

The worker's group weighs the same however many threads it runs, so it gets every usable core, up to
OWN_PROCESS_MAX_THREADS: on 2 AVX2-only cores (scripts/avx2-only) one thread wrote 36-44 tokens/s and
two 47.5-65, and the README demo kept its first audio (0.6-1.2 s) with no stall either way. The
in-process model (torch) shares the emulator's group, where speech is relayed: one thread per
CORES_PER_THREAD cores, at least one, which on 2 cores leaves the other to speech (and with one thread a
runtime computes on the calling thread, no spinning pool that burns the other core).
`EMULATOR_LLM_THREADS` > 0 overrides both.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

CORES_PER_THREAD = 4
# Not measured beyond 2: the model's matmuls are 576 wide, and a second thread gave 1.5x, not 2x.
OWN_PROCESS_MAX_THREADS = 4
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


def thread_budget(configured: int = 0, cores: int | None = None, *, own_process: bool = False) -> int:
    """`configured` when > 0; else, for a model in a process of its own, every usable core up to
    OWN_PROCESS_MAX_THREADS, and for one in the emulator's process one thread per CORES_PER_THREAD
    cores (at least one)."""
    if configured > 0:
        return configured
    cores = cores if cores is not None else usable_cores()
    if own_process:
        return max(1, min(cores, OWN_PROCESS_MAX_THREADS))
    return max(1, cores // CORES_PER_THREAD)


def yield_to_speech() -> None:
    """Lower the calling thread's scheduling priority by YIELD_NICE (Linux schedules each thread as its
    own task; where that is refused or not supported, it logs why and nothing changes)."""
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + YIELD_NICE))
    except (AttributeError, OSError) as exc:
        logger.warning("the local model's thread keeps its priority (%s): speech may wait for it", exc)


def yield_process_to_speech() -> None:
    """`yield_to_speech` for a process of the model's own (the onnxruntime-genai worker). Where the
    kernel groups tasks by session (autogroup: /proc/sys/kernel/sched_autogroup_enabled, on in most
    distributions' kernels), the scheduler first shares the cores between the groups, evenly, and only
    then by nice inside each: the emulator starts every replica in a session of its own, so the worker's
    nice weighed nothing against Kokoro's. Measured on the README demo (2 cores): the worker took 60-90%
    of a core while a step of speech computed, Kokoro one core instead of two, and its steps 2-3x their
    time. So the worker leaves the emulator's session for one of its own, whose group runs YIELD_NICE
    below the others (/proc/self/autogroup); without autogroup, the thread's nice is the one that counts."""
    try:
        os.setsid()
        Path("/proc/self/autogroup").write_text(str(YIELD_NICE))
    except (AttributeError, OSError) as exc:  # not on Linux, or no autogroup
        logger.info("the local model's process keeps its session's share of the cores (%s)", exc)
    yield_to_speech()
