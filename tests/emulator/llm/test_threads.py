"""The local model's thread budget comes from the cores, and its thread (or its process) yields to speech,
so Kokoro keeps its share of them."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from emulator.llm.threads import (
    OWN_PROCESS_MAX_THREADS,
    YIELD_NICE,
    thread_budget,
    usable_cores,
    yield_process_to_speech,
    yield_to_speech,
)


def test_one_thread_per_four_cores_and_at_least_one() -> None:
    assert [thread_budget(cores=n) for n in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]


def test_a_model_in_a_process_of_its_own_gets_every_core_up_to_its_limit() -> None:
    counts = [thread_budget(cores=n, own_process=True) for n in (1, 2, 3, 16)]
    assert counts == [1, 2, 3, OWN_PROCESS_MAX_THREADS]


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


def _report_session(connection) -> None:
    yield_process_to_speech()
    connection.send(
        (
            os.getsid(0),
            os.getpid(),
            Path("/proc/self/autogroup").read_text(),
            os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
        )
    )


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="the kernel groups no tasks by session")
def test_the_models_process_leaves_the_session_and_its_group_yields_to_speech() -> None:
    """Under autogroup the scheduler shares the cores between sessions before nice counts: the worker
    takes a session of its own, whose group runs YIELD_NICE below, and the session it left keeps its
    weight (this process's). A process of the kernel's root group (a session that began before autogroup,
    as in some CI containers) reads an empty /proc/self/autogroup."""
    mine = Path("/proc/self/autogroup").read_text()
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_report_session, args=(child,))
    process.start()
    session, pid, group, nice = parent.recv()
    process.join(10)
    assert session == pid != os.getsid(0)
    assert group.split()[-2:] == ["nice", str(YIELD_NICE)]
    assert group.split()[0].startswith("/autogroup-")
    assert group.split()[0] != (mine.split() or ["the root group"])[0]
    assert Path("/proc/self/autogroup").read_text() == mine
    assert nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + YIELD_NICE)
