"""Admission past the line's bound: a typed refusal, every other session served as before."""

import asyncio

from tests.support.speed_model import SpeedModelEngine, SpeedModelScheduler, listen, request, sentence, stalls
from tts.scheduling.admission import EngineBusy, max_waiting
from tts.serving.streaming import AudioStats, Busy, audio_frames
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
