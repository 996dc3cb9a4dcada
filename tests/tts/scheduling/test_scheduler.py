import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

import pytest

from tests.support.speed_model import (
    SpeedModelEngine,
    SpeedModelScheduler,
    listen,
    request,
    sentence,
    stalls,
)
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import Job, Scheduler
from tts.serving.streaming import AudioStats, audio_frames


async def drain(job: Job) -> tuple[int, float]:
    """Bytes of PCM received, and the loop time the job ended."""
    total = 0
    while (item := await job.audio.get()) is not None:
        assert not isinstance(item, BaseException), item
        total += len(item)
    return total, asyncio.get_running_loop().time()


@pytest.fixture
async def scheduler(engine, plan):
    scheduler = Scheduler(engine, plan)
    scheduler.start()
    yield scheduler
    await scheduler.stop()


async def test_sessions_take_turns_instead_of_waiting_for_each_other(scheduler):
    a_jobs = [
        scheduler.submit("a", request(f"Sentence {n} of the first session.", f"a{n}")) for n in range(3)
    ]
    b_job = scheduler.submit("b", request("The second session speaks too.", "b0"))
    results = await asyncio.gather(*(drain(j) for j in [*a_jobs, b_job]))
    ends = {job.request.request_id: end for job, (_, end) in zip([*a_jobs, b_job], results, strict=True)}
    assert all(size > 0 for size, _ in results)
    assert ends["b0"] < ends["a1"] < ends["a2"], "b must not wait behind all of a's queue"
    assert ends["a0"] < ends["a1"], "a session's messages stay in order"


async def test_cancelling_a_queued_job_drops_it_and_keeps_the_others(scheduler):
    first = scheduler.submit("s", request("First sentence here.", "1"))
    second = scheduler.submit("s", request("Second sentence here.", "2"))
    third = scheduler.submit("s", request("Third sentence here.", "3"))
    scheduler.cancel(second)
    assert await second.audio.get() is None and second.audio.empty()
    (first_bytes, _), (third_bytes, _) = await asyncio.gather(drain(first), drain(third))
    assert first_bytes > 0 and third_bytes > 0
    assert scheduler.queued == 0


async def test_cancelling_the_running_job_frees_the_engine(scheduler):
    long_text = " ".join(["This sentence keeps the model busy for quite a while, on purpose."] * 4)
    running = scheduler.submit("s", request(long_text, "long"))
    after = scheduler.submit("s", request("Short one.", "short"))
    await asyncio.sleep(0.3)
    started = asyncio.get_running_loop().time()
    scheduler.cancel(running)
    size, ended = await drain(after)
    assert size > 0
    assert ended - started < 3.0, "the cancelled forward pass should stop, not run to its end"


async def test_cancelling_a_computed_job_stops_its_unsent_audio(scheduler):
    """Barge-in after the audio is computed but before it is all sent: nothing more may come out."""
    job = scheduler.submit("s", request("Computed before the barge-in.", "done"))
    after = scheduler.submit("s", request("Next.", "next"))
    async with asyncio.timeout(120):
        await after.audio.get()  # a session's jobs run in order: `job` is computed, its audio untouched
    assert job.finished and not job.audio.empty()
    scheduler.cancel(job)
    assert job.cancelled
    assert [frame async for frame in audio_frames(job, 4800, AudioStats())] == []


async def test_a_long_sentence_does_not_hold_back_another_sessions_first_audio(scheduler):
    """Windows are the unit of a turn: b's first audio comes while a's one long sentence is still
    being decoded, window by window."""
    long_text = (
        "This one long sentence keeps talking about the weather, the trains, the price of coffee and "
        "the many small things that happen in a city on a busy morning before lunch."
    )
    a = scheduler.submit("a", request(long_text, "long"))
    first_a = await asyncio.wait_for(a.audio.get(), 60)
    assert isinstance(first_a, bytes) and len(first_a) < 48_000, "the first window is short"
    b = scheduler.submit("b", request("Hello there.", "b"))
    first_b = await asyncio.wait_for(b.audio.get(), 60)
    assert isinstance(first_b, bytes)
    assert not a.finished, "b's first audio must not wait for the end of a's sentence"
    await asyncio.wait_for(asyncio.gather(drain(a), drain(b)), 120)


# The policy, on the speed model (tests/support/speed_model.py): an engine whose speed the test sets,
# through the real window plan, `WindowedDecode` and `WindowDecoder`.
@pytest.fixture
async def model():
    schedulers = []

    def make(
        realtime: float, text_side_s: float = 0.0, lanes: int = 1
    ) -> tuple[SpeedModelScheduler, SpeedModelEngine]:
        engine = SpeedModelEngine(realtime, text_side_s, lanes)
        scheduler = SpeedModelScheduler(engine, engine.plan, engine.calibration())  # type: ignore[arg-type]
        scheduler.start()
        schedulers.append(scheduler)
        return scheduler, engine

    yield make
    for scheduler in schedulers:
        await scheduler.stop()


async def answer(scheduler: Scheduler, name: str, frames: int, sentences: int):
    """One session's answer, its sentences queued at once (as the agent sends them): what its listener
    heard, and the places in line it was told."""
    jobs = [scheduler.submit(name, request(sentence(frames), f"{name}{n}")) for n in range(sentences)]
    heard, places = [], []
    for job in jobs:
        got, told = await listen(job)
        heard += got
        places += told
    return heard, places


# Speeds as the audio seconds a full step computes per second: 0.4x and 0.7x (slower than real time:
# the torch engine on a CPU, RTF 1.4-2.5), 1.5x (the int8 `conv` graph on 2 AVX2 cores, RTF 0.67), 3x and
# 8x (2 VNNI cores with lanes, RTF 0.22-0.33); with a text side of 0.05-0.5 s a sentence. Time is scaled
# down with the answers: sentences of 0.5-1.2 s of audio, so each case takes seconds.
SPEEDS = [(0.4, 0.05), (0.7, 0.5), (1.5, 0.2), (3.0, 0.5), (3.0, 0.05), (8.0, 0.05)]


async def at_every_speed(case: Callable[[float, float], Awaitable[None]]) -> None:
    """`case(realtime, text_side_s)` at every speed at once, each on its own scheduler and engine: the
    modelled engines sleep their steps' time on their own worker threads, so the cases do not slow each
    other down: one after another, the three tests below took 94 s of a 2-core run at these six speeds,
    side by side 15 s (the slowest speed's time each). The failures name their speeds."""
    results = await asyncio.gather(*(case(*speed) for speed in SPEEDS), return_exceptions=True)
    failed = [(speed, r) for speed, r in zip(SPEEDS, results, strict=True) if isinstance(r, BaseException)]
    if failed:
        raise AssertionError(f"failed at (realtime, text side) {[speed for speed, _ in failed]}: {failed}")


def sentence_frames(realtime: float) -> int:
    return 48 if realtime >= 1 else 20


async def test_one_session_never_stalls_at_any_speed(model):
    """Alone, a listener never waits, on an engine slower than real time too: the first window is the
    ramp's, and, where the engine cannot keep up at all, the audio is held back until the rest can
    follow (a later first audio, never a gap)."""

    async def case(realtime: float, text_side_s: float) -> None:
        scheduler, _ = model(realtime, text_side_s, lanes=2)
        heard, places = await asyncio.wait_for(answer(scheduler, "a", sentence_frames(realtime), 2), 60)
        assert places == []
        assert stalls(heard) < 0.05, stalls(heard)

    await at_every_speed(case)


async def test_up_to_the_claimed_capacity_nobody_stalls(model):
    async def case(realtime: float, text_side_s: float) -> None:
        scheduler, _ = model(realtime, text_side_s, lanes=2)
        capacity = scheduler.capacity
        assert capacity is not None and capacity >= 1
        frames = sentence_frames(realtime)
        sessions = [answer(scheduler, f"s{n}", frames, 2) for n in range(capacity)]
        results = await asyncio.wait_for(asyncio.gather(*sessions), 60)
        waited = [round(stalls(heard), 3) for heard, _ in results]
        assert all(w < 0.1 for w in waited), (capacity, waited)
        assert all(places == [] for _, places in results), "within the capacity nobody waits for a slot"

    await at_every_speed(case)


async def test_past_the_capacity_the_playing_never_stall_and_the_others_wait_told_so(model):
    """capacity + 2 sessions: the first `capacity` (arrived first) play without a gap; the two after
    them are told their place in line, start in order once slots free, and never wait once playing.
    (On main's fixed SATURATED_WAIT_S at 0.4-1.5x: the playing one stalled 0.1-1.5 s, the others
    0.8-4.1 s.)"""

    async def case(realtime: float, text_side_s: float) -> None:
        scheduler, _ = model(realtime, text_side_s, lanes=2)
        capacity = scheduler.capacity
        assert capacity is not None
        frames = sentence_frames(realtime)
        loop = asyncio.get_running_loop()
        tasks = []
        for n in range(capacity + 2):
            tasks.append(asyncio.create_task(answer(scheduler, f"s{n}", frames, 2)))
            await asyncio.sleep(0.01)
        assert scheduler.load["waiting"] == 2
        results = await asyncio.wait_for(asyncio.gather(*tasks), 120)
        playing, waiting = results[:capacity], results[capacity:]
        waited = [round(stalls(heard), 3) for heard, _ in results]
        assert all(w < 0.1 for w in waited), (capacity, waited)
        assert all(places == [] for _, places in playing)
        assert [places for _, places in waiting] == [[1], [2, 1]], [places for _, places in waiting]
        first_done = min(heard[-1][0] + heard[-1][1] for heard, _ in playing)
        firsts = [heard[0][0] for heard, _ in waiting]
        assert first_done - 0.05 <= firsts[0] <= firsts[1], ("a slot frees, then the first in line", firsts)
        assert loop.time() > firsts[1]

    await at_every_speed(case)


async def test_a_job_is_started_when_a_worker_takes_it_up_not_when_it_is_submitted(model):
    """`Job.started_at` (the container's QueueWait): a job submitted behind another session's long
    step waits for the one worker, so it starts after that step, later than it was submitted."""
    scheduler, _ = model(realtime=6.25)
    a = scheduler.submit("a", request(sentence(1600), "a"))
    assert isinstance(await asyncio.wait_for(a.audio.get(), 30), bytes)  # a's first step is done
    b = scheduler.submit("b", request(sentence(400), "b"))
    while not isinstance(await asyncio.wait_for(b.audio.get(), 30), bytes):  # b's first step is done
        pass
    assert a.started_at is not None and b.started_at is not None
    assert a.submitted_at <= a.started_at < b.submitted_at < b.started_at
    scheduler.cancel(a)  # the rest of both answers (7 s of the model's time) says nothing more
    scheduler.cancel(b)


async def test_the_session_nearest_to_running_out_is_served_first(model):
    """Earliest deadline first: with b's listener 0.3 s from a gap and a's seconds ahead, b's steps come
    before a's, although a was queued first (round robin would alternate)."""
    scheduler, engine = model(realtime=12.5)
    a = scheduler.submit("a", request(sentence(1600), "a"))
    heard_a = asyncio.create_task(listen(a))
    await asyncio.sleep(0.5)  # a alone: seconds of audio ahead of its listener
    b = scheduler.submit("b", request(sentence(400), "b"))
    heard_b, _ = await asyncio.wait_for(listen(b), 30)
    await asyncio.wait_for(heard_a, 30)
    order = [rid for rid, _ in engine.steps]
    first_b = order.index("b")
    assert order[first_b : first_b + 3] == ["b", "b", "b"], ("b, nearer to a gap, goes before a", order)
    assert "a" in order[first_b:], "a, seconds ahead, still gets its turns once b has caught up"
    assert stalls(heard_b) < 0.05


async def test_a_listener_with_little_buffered_gets_a_short_step(model):
    """The step is sized to the time the listener has left. On an engine that decodes at 8 ms a frame,
    the fixed plan (12 frames, 0.3 s of audio, then 48 frames taking 0.51 s) stalls; the first window
    is the ramp's (a little longer: its audio outlasts the shortest second step, 24 frames and their
    context in 0.32 s), and every later step fits the time the listener has left, so the listener never
    waits."""
    scheduler, engine = model(realtime=0.025 / 0.008)
    job = scheduler.submit("s", request(sentence(240), "s"))
    heard, _ = await asyncio.wait_for(listen(job), 30)
    sizes = [max(b - a for a, b in ranges) for _, ranges in engine.steps]
    first = engine.plan.first_window(240, scheduler.speed, 1)
    assert 12 < first <= 24 and sizes[0] == first + 8, ("the ramp's first window", first, sizes)
    assert sizes[1] < 48 + 16, sizes
    assert stalls(heard) < 0.05, (stalls(heard), sizes)
    fixed = [b - a for a, b in WindowPlan(12, 120, 8).windows(240)]
    assert len(engine.steps) <= len(fixed) + 3, ("long steps once the listener is ahead", sizes)


async def test_three_sessions_that_arrive_together_play_without_a_gap(model):
    """Three sessions within 50 ms, each a three-sentence answer whose every sentence costs a text side
    (0.05 s) before its first window, on an engine with capacity for three or more. Each new session's
    first audio waits for one step of each playing listener, and each first window is the ramp's for
    the sessions sharing the engine: no listener waits for audio."""
    scheduler, _ = model(realtime=0.025 / 0.003, text_side_s=0.05, lanes=2)
    assert scheduler.capacity >= 3
    results = []
    for name in "abc":
        results.append(asyncio.create_task(answer(scheduler, name, 80, 3)))
        await asyncio.sleep(0.02)
    heard = await asyncio.wait_for(asyncio.gather(*results), 60)
    waited = {name: round(stalls(h), 3) for name, (h, _) in zip("abc", heard, strict=True)}
    assert all(w < 0.05 for w in waited.values()), ("no listener waits", waited)


async def test_cancel_still_stops_a_budgeted_step(model):
    scheduler, _ = model(realtime=0.025 / 0.02)
    job = scheduler.submit("s", request(sentence(400), "s"))
    await asyncio.wait_for(job.audio.get(), 10)
    await asyncio.sleep(0.1)
    started = asyncio.get_running_loop().time()
    scheduler.cancel(job)
    after = scheduler.submit("s", request(sentence(20), "next"))
    assert await asyncio.wait_for(listen(after), 10)
    assert asyncio.get_running_loop().time() - started < 1.0


async def test_one_sessions_word_mapping_does_not_hold_back_another_sessions_first_audio(scheduler):
    """G2P and the word mapping of a request with timestamps run in the text worker, outside the
    engine's turns: a 4,000-character URL (its mapping about 0.9 s on 2 cores, against a first audio of
    about 0.2 s) is still being mapped when another session's first audio arrives."""
    url = "https://example.com/" + "a." * 1990
    a = scheduler.submit("a", dataclasses.replace(request(url, "url"), written=url))
    await asyncio.sleep(0)  # a is queued first: before, its first turn took the engine for the mapping
    b = scheduler.submit("b", request("Hello there.", "b"))
    first_b = await asyncio.wait_for(b.audio.get(), 60)
    assert isinstance(first_b, bytes)
    assert a.segments is None, "b's first audio waited for a's word mapping"
    scheduler.cancel(a)
    await asyncio.wait_for(drain(b), 60)
    assert scheduler.queued == 0
