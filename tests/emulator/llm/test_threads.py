"""The local model's thread budget comes from the cores, so Kokoro keeps its share of them."""

from __future__ import annotations

from emulator.llm.threads import thread_budget, usable_cores


def test_one_thread_per_four_cores_and_at_least_one() -> None:
    assert [thread_budget(cores=n) for n in (1, 2, 4, 8, 16)] == [1, 1, 1, 2, 4]


def test_a_configured_count_wins_and_the_default_follows_this_machine() -> None:
    assert thread_budget(3, cores=2) == 3
    assert thread_budget() == max(1, usable_cores() // 4)
