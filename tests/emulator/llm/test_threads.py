"""The local model's thread budget comes from the cores, and its thread yields to speech, so Kokoro keeps
its share of them."""

from __future__ import annotations

import os
import threading

from emulator.llm.threads import YIELD_NICE, thread_budget, usable_cores, yield_to_speech


def test_one_thread_per_four_cores_and_at_least_one() -> None:
    assert [thread_budget(cores=n) for n in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]


def test_a_configured_count_wins_and_the_default_follows_this_machine() -> None:
    assert thread_budget(3, cores=2) == 3
    assert thread_budget() == max(1, usable_cores() // 4)


def test_the_models_thread_yields_to_speech() -> None:
    """The thread that calls `yield_to_speech` runs YIELD_NICE below the process; the others keep theirs."""
    seen: dict[str, int] = {}

    def decoder() -> None:
        yield_to_speech()
        seen["decoder"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread = threading.Thread(target=decoder)
    thread.start()
    thread.join()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen["decoder"] == min(19, mine + YIELD_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine
