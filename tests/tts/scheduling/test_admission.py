"""Admission past the line's bound: a typed refusal, every other session served as before."""

import asyncio

import pytest

from tests.support.speed_model import SpeedModelEngine, SpeedModelScheduler, listen, request, sentence, stalls
from tts.scheduling.admission import EngineBusy, max_waiting
from tts.serving.streaming import AudioStats, Busy, SynthesisFailed, audio_frames
from tts.wire import protocol


async def test_past_the_line_a_session_is_refused_busy_and_the_others_are_served():
    engine = SpeedModelEngine(realtime=3.0, text_side_s=0.05)
    scheduler = SpeedModelScheduler(engine, engine.plan, engine.calibration())  # type: ignore[arg-type]
    scheduler.start()
    try:
        capacity = scheduler.capacity
        assert capacity == 1
        jobs = [scheduler.submit(f"s{n}", request(sentence(24), f"s{n}")) for n in range(1 + max_waiting(1))]
        refused = scheduler.submit("late", request(sentence(24), "late"))
        assert scheduler.load["waiting"] == max_waiting(1)
        frames = audio_frames(refused, 4800, AudioStats())
        try:
            await asyncio.wait_for(anext(frames), 1)
        except Busy as busy:
            assert busy.code == "busy" and isinstance(busy.__cause__, EngineBusy)
        else:
            raise AssertionError("a refused job must raise Busy")
        heard = await asyncio.wait_for(asyncio.gather(*(listen(job) for job in jobs)), 30)
        assert all(audio and stalls(audio) < 0.05 for audio, _ in heard)
        assert [places for _, places in heard] == [list(range(n, 0, -1)) for n in range(len(jobs))]
    finally:
        await scheduler.stop()


def test_the_queued_message_names_the_request_and_its_place():
    synthesize = request("Hello.", "r1")
    assert protocol.queued(synthesize, 2) == {"type": "queued", "request_id": "r1", "position": 2}


async def test_a_waiting_session_that_goes_away_leaves_nothing_behind():
    """A session in line that closes and then cancels what it asked for (a client gone) gives up its
    place, and the scheduler keeps no trace of it: the others move up."""
    engine = SpeedModelEngine(realtime=3.0, text_side_s=0.05)
    scheduler = SpeedModelScheduler(engine, engine.plan, engine.calibration())  # type: ignore[arg-type]
    scheduler.start()
    try:
        assert scheduler.capacity == 1
        playing = scheduler.submit("a", request(sentence(24), "a"))
        gone = scheduler.submit("gone", request(sentence(24), "gone"))
        waiting = scheduler.submit("b", request(sentence(24), "b"))
        assert scheduler.load["waiting"] == 2
        scheduler.closed("gone")
        scheduler.cancel(gone)
        assert scheduler.load["waiting"] == 1
        assert "gone" not in scheduler._slots.closed and "gone" not in scheduler._queues
        heard = await asyncio.wait_for(asyncio.gather(listen(playing), listen(waiting)), 30)
        assert heard[1][1] == [2, 1], "b moved up when the session ahead of it went away"
    finally:
        await scheduler.stop()


async def test_sessions_let_in_as_slots_free_start_without_a_stall():
    """Issue #49, capacity + 2: four answers asked at once on an engine that keeps two gap-free, each
    session closing once its audio is in (as the capacity study's clients do), so both slots free
    within a step of each other. Before, both waiting sessions were let in at once, and the second's
    first turn (its text side, 0.3 s here) ran while the first had only its first window's 0.3 s to
    play: it stalled 0.11-0.2 s. Now the second is let in once the first has audio ahead of it."""
    engine = SpeedModelEngine(realtime=10.0, text_side_s=0.3, lanes=2)
    scheduler = SpeedModelScheduler(engine, engine.plan, engine.calibration())  # type: ignore[arg-type]
    scheduler.start()

    async def answer(name: str) -> tuple[list[tuple[float, float]], list[int]]:
        jobs = [scheduler.submit(name, request(sentence(60), f"{name}{n}")) for n in range(3)]
        heard, places = [], []
        for job in jobs:
            got, told = await listen(job)
            heard, places = heard + got, places + told
        scheduler.closed(name)
        return heard, places

    try:
        assert scheduler.capacity == 2
        tasks = []
        for n in range(4):
            tasks.append(asyncio.create_task(answer(f"s{n}")))
            await asyncio.sleep(0.02)
        results = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    finally:
        await scheduler.stop()
    waited = [round(stalls(heard), 3) for heard, _ in results]
    assert all(w < 0.05 for w in waited[2:]) and all(w < 0.1 for w in waited[:2]), waited
    assert [places for _, places in results] == [[], [], [1], [2, 1]]
    first_done = min(heard[-1][0] for heard, _ in results[:2])
    firsts = [heard[0][0] for heard, _ in results[2:]]
    assert first_done < firsts[0] < firsts[1] < first_done + 1.5, (first_done, firsts)


async def test_a_fault_while_picking_fails_that_job_alone_and_the_worker_goes_on():
    """A fault in the scheduler's own figures for one session's job (once: a segment read as a list)
    ended the worker, and every session then waited for audio until its client gave up. Now that job
    fails with a typed error that names the kind of fault, not its internals, and the next session in
    line is let in and served."""
    engine = SpeedModelEngine(realtime=3.0, text_side_s=0.05)
    scheduler = SpeedModelScheduler(engine, engine.plan, engine.calibration())  # type: ignore[arg-type]
    picking = scheduler._picker.pick

    def pick(ready):
        if "faulty" in ready:
            raise TypeError("'Segment' object is not subscriptable")
        return picking(ready)

    scheduler._picker.pick = pick  # type: ignore[method-assign]
    scheduler.start()
    try:
        faulty = scheduler.submit("faulty", request(sentence(12), "faulty"))
        served = scheduler.submit("served", request(sentence(12), "served"))
        frames = audio_frames(faulty, 4800, AudioStats())
        with pytest.raises(SynthesisFailed) as failed:
            await asyncio.wait_for(anext(frames), 10)
        assert failed.value.code == "synthesis_failed"
        assert "TypeError" in str(failed.value) and "subscriptable" not in str(failed.value)
        audio, places = await asyncio.wait_for(listen(served), 30)
        assert audio and places == [1], "served waited for the faulty one's slot, then was heard"
        assert "faulty" not in scheduler._queues
    finally:
        await scheduler.stop()
