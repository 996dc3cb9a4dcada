"""The capacity study's rule: a level holds when every listener's stalls add up to at most 100 ms; the
capacity is the last level that held before the first that did not."""

from benchmarks.capacity import GAP_FREE_STALL_MS, capacity_of, gap_free


def level(sessions: int, *stall_s: float) -> dict:
    return {"sessions": sessions, "per_session": [{"stall_s": s} for s in stall_s]}


def test_a_level_holds_only_when_every_listener_stays_within_the_bound():
    bound = GAP_FREE_STALL_MS / 1000
    assert gap_free(level(2, 0.0, bound))
    assert not gap_free(level(2, 0.0, bound + 0.001))


def test_the_capacity_is_the_last_level_before_the_first_that_failed():
    assert capacity_of([level(1, 0.0), level(2, 0.0, 0.05), level(3, 0.0, 0.0, 0.4)]) == 2
    # a later level that happens to hold does not count: the replica already failed below it
    assert capacity_of([level(1, 0.0), level(2, 0.3, 0.0), level(3, 0.0, 0.0, 0.0)]) == 1
    assert capacity_of([level(1, 0.2)]) == 0
    assert capacity_of([level(1, 0.0), level(2, 0.0, 0.0)]) == 2
