import asyncio
import dataclasses
import time

import numpy as np
import pytest

from tts.config import SAMPLES_PER_FRAME
from tts.engines.base import CancelFlag, SynthesisCancelled
from tts.engines.decode import WindowDecoder
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import FIRST_AUDIO_TARGET_S, SATURATED_WAIT_S, Job, Scheduler
from tts.scheduling.speed import DecodeSpeed
from tts.serving.streaming import AudioStats, audio_frames
from tts.wire.protocol import Synthesize


def request(text: str, rid: str) -> Synthesize:
    return Synthesize(text=text, voice="jm_kumo", speed=1.0, format="pcm", lang="en-us", request_id=rid)


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


# The policy, on a fake engine whose speed the test sets: every step sleeps `frame_s` per decoded frame
# (context included) and returns silence, through the real window plan, `WindowedDecode` and
# `WindowDecoder`.
class FakeFeatures:
    def __init__(self, frames: int) -> None:
        self.frames = frames


class FakeEngine:
    """Each text is one segment of `int(text)` frames (25 ms of audio each)."""

    def __init__(self, frame_s: float, lanes: int = 1, text_side_s: float = 0.0) -> None:
        self.frame_s = frame_s
        self.text_side_s = text_side_s  # each segment's text side (the real one: ~0.15 s on 2 cores)
        self.plan = WindowPlan(12, 120, 8, 4, lanes)
        self.speed = DecodeSpeed(0.0, frame_s, frame_s)
        self.steps: list[tuple[str, list[tuple[int, int]]]] = []  # (request id, padded windows)

    def run_flag(self) -> CancelFlag:
        return CancelFlag()

    def segments(self, text: str, lang: str) -> list[list[int]]:
        return [[int(text)]]

    def features(self, tokens, voice, speed, run_flag=None) -> FakeFeatures:
        time.sleep(self.text_side_s)
        return FakeFeatures(tokens[0])

    def window_decoder(
        self, features: FakeFeatures, context_frames: int, run_flag: CancelFlag
    ) -> WindowDecoder:
        rid = self._current

        def decode(ranges: list[tuple[int, int]]) -> list[np.ndarray]:
            self.steps.append((rid, ranges))
            deadline = time.perf_counter() + self.frame_s * max(b - a for a, b in ranges)
            while time.perf_counter() < deadline:
                if run_flag.terminate:
                    raise SynthesisCancelled()
                time.sleep(0.002)
            return [np.zeros((b - a) * SAMPLES_PER_FRAME, np.float32) for a, b in ranges]

        return WindowDecoder(decode, features.frames, context_frames)


class FakeScheduler(Scheduler):
    """Tells the fake engine whose step it decodes."""

    def _run_step(self, job: Job) -> bytes | None:
        self._engine._current = job.request.request_id
        return super()._run_step(job)


@pytest.fixture
async def fake():
    schedulers = []

    def make(frame_s: float, lanes: int = 1, text_side_s: float = 0.0) -> tuple[FakeScheduler, FakeEngine]:
        engine = FakeEngine(frame_s, lanes, text_side_s)
        scheduler = FakeScheduler(engine, engine.plan, engine.speed)
        scheduler.start()
        schedulers.append(scheduler)
        return scheduler, engine

    yield make
    for scheduler in schedulers:
        await scheduler.stop()


async def listen(job: Job) -> list[tuple[float, float]]:
    """(arrival, seconds of audio) of each step, on the loop's clock."""
    loop, heard = asyncio.get_running_loop(), []
    while (item := await job.audio.get()) is not None:
        assert isinstance(item, bytes), item
        heard.append((loop.time(), len(item) / 2 / 24_000))
    return heard


def stalls(heard: list[tuple[float, float]], after: float = 0.0) -> float:
    """Seconds a player that starts at the first audio and plays at real time waits for audio (for
    audio arriving after loop time `after`)."""
    played_until, waited = heard[0][0], 0.0
    for at, seconds in heard:
        waited += max(0.0, at - played_until) if at > after else 0.0
        played_until = max(played_until, at) + seconds
    return waited


async def test_a_job_is_started_when_a_worker_takes_it_up_not_when_it_is_submitted(fake):
    """`Job.started_at` (the container's QueueWait): a job submitted behind another session's long
    step waits for the one worker, so it starts after that step, later than it was submitted."""
    scheduler, _ = fake(frame_s=0.004)
    a = scheduler.submit("a", request("1600", "a"))
    assert isinstance(await asyncio.wait_for(a.audio.get(), 30), bytes)  # a's first step is done
    b = scheduler.submit("b", request("400", "b"))
    await asyncio.wait_for(asyncio.gather(listen(a), listen(b)), 30)
    assert a.started_at is not None and b.started_at is not None
    assert a.submitted_at <= a.started_at < b.submitted_at < b.started_at


async def test_the_session_nearest_to_running_out_is_served_first(fake):
    """Earliest deadline first: with b's listener 0.3 s from a gap and a's seconds ahead, b's steps come
    before a's, although a was queued first (round robin would alternate)."""
    scheduler, engine = fake(frame_s=0.002)
    a = scheduler.submit("a", request("1600", "a"))
    heard_a = asyncio.create_task(listen(a))
    await asyncio.sleep(0.5)  # a alone: seconds of audio ahead of its listener
    b = scheduler.submit("b", request("400", "b"))
    heard_b = await asyncio.wait_for(listen(b), 30)
    await asyncio.wait_for(heard_a, 30)
    order = [rid for rid, _ in engine.steps]
    first_b = order.index("b")
    assert order[first_b : first_b + 3] == ["b", "b", "b"], ("b, nearer to a gap, goes before a", order)
    assert "a" in order[first_b:], "a, seconds ahead, still gets its turns once b has caught up"
    assert stalls(heard_b) < 0.05


async def test_a_listener_with_little_buffered_gets_a_short_step(fake):
    """The step is sized to the time the listener has left. On an engine that decodes at 8 ms a frame,
    the fixed plan (12 frames, 0.3 s of audio, then 48 frames taking 0.51 s) stalls; the first window
    stretches a little, to outlast the shortest second step (24 frames, 0.32 s), and every later step
    fits the time the listener has left, so the listener never waits."""
    scheduler, engine = fake(frame_s=0.008)
    job = scheduler.submit("s", request("240", "s"))
    heard = await asyncio.wait_for(listen(job), 30)
    sizes = [max(b - a for a, b in ranges) for _, ranges in engine.steps]
    assert 12 + 8 < sizes[0] <= 16 + 8, ("the first window: 12 frames, stretched by a few", sizes)
    assert sizes[1] < 48 + 16, sizes
    assert stalls(heard) < 0.05, (stalls(heard), sizes)
    fixed = [b - a for a, b in WindowPlan(12, 120, 8).windows(240)]
    assert len(engine.steps) <= len(fixed) + 2, ("long steps once the listener is ahead", sizes)


async def test_no_session_starves_when_the_engine_cannot_keep_up(fake):
    """Four sessions on an engine with capacity for three: the three take turns from the start, none
    is run to its end before the others, and none of their listeners waits for audio (a new session's
    first audio comes after one step of each playing listener, so a, b, c start 0.1-0.7 s in); the
    fourth, deferred, is still served within its bound."""
    scheduler, engine = fake(frame_s=0.004)  # a 120-frame step: 3 s of audio in 0.54 s: capacity 3
    assert scheduler.capacity == 3
    loop = asyncio.get_running_loop()
    sent = loop.time()
    jobs = [scheduler.submit(name, request("240", name)) for name in "abcd"]
    heard = await asyncio.wait_for(asyncio.gather(*(listen(job) for job in jobs)), 60)
    firsts = {name: h[0][0] - sent for name, h in zip("abcd", heard, strict=True)}
    order = [rid for rid, _ in engine.steps]
    assert firsts["a"] < firsts["b"] < firsts["c"] < FIRST_AUDIO_TARGET_S + 0.5, ("a, b, c in turn", firsts)
    assert all(stalls(h) < 0.05 for h in heard[:3]), ("a, b, c without a gap", [stalls(h) for h in heard])
    ends = {name: max(i for i, rid in enumerate(order) if rid == name) for name in "abc"}
    starts = {name: order.index(name) for name in "abcd"}
    assert max(starts[n] for n in "abc") < min(ends.values()), ("a, b and c take turns", order)
    assert firsts["d"] > FIRST_AUDIO_TARGET_S, ("saturated, d waits", firsts)
    assert firsts["d"] < FIRST_AUDIO_TARGET_S + SATURATED_WAIT_S + 1.0, ("but not without bound", firsts)


async def test_three_sessions_that_arrive_together_play_without_a_gap(fake):
    """Three sessions within 50 ms, each a four-sentence answer whose every sentence costs a text side
    (0.15 s) before its first window, on an engine with capacity for three. The first session starts
    before the others exist; then each new session's first audio waits for one step of each playing
    listener, and each first window lasts until its next step, the others' first turns (text side
    included) counted: no listener waits for audio. (Counting a shortest step for another session's
    first turn, and serving a first audio due before a playing listener runs out first, stalled every
    listener once, 0.1-0.3 s, at the start: BENCHMARKS.md, "Playback".)"""
    scheduler, _ = fake(frame_s=0.004, text_side_s=0.15)
    assert scheduler.capacity == 3
    jobs = []
    for name in "abc":
        jobs += [scheduler.submit(name, request("120", f"{name}{n}")) for n in range(4)]
        await asyncio.sleep(0.02)

    async def session(name: str) -> list[tuple[float, float]]:
        heard = []
        for job in jobs:
            if job.owner == name:
                heard += await listen(job)
        return heard

    heard = await asyncio.wait_for(asyncio.gather(*(session(name) for name in "abc")), 60)
    waited = {name: round(stalls(h), 3) for name, h in zip("abc", heard, strict=True)}
    assert all(w < 0.05 for w in waited.values()), ("no listener waits", waited)


async def test_saturated_a_new_session_waits_instead_of_every_listener_stalling(fake):
    """With capacity for one session (the fake's speed), a second arriving while the first plays waits
    for its first audio: a's listener, with less than SATURATED_WAIT_S buffered, gets a whole step more
    before b's first (without the saturated wait, b's first-audio target would come before a runs out,
    and b would be served as soon as the step in flight ends), and a plays on without a gap (its start
    may stall: this engine is too slow even for the plan's shortest second step, so b arrives once a is
    seconds ahead)."""
    scheduler, _ = fake(frame_s=0.012)  # a 120-frame step: 3 s of audio in 1.6 s: capacity 1
    assert scheduler.capacity == 1
    a = scheduler.submit("a", request("800", "a"))
    heard_a = asyncio.create_task(listen(a))
    await asyncio.sleep(3.0)  # past a's start: seconds of audio buffered
    assert scheduler.load == {"sessions": 1, "capacity": 1, "saturated": False}
    loop = asyncio.get_running_loop()
    sent = loop.time()
    b = scheduler.submit("b", request("100", "b"))
    assert scheduler.load["saturated"]
    heard_b = await asyncio.wait_for(listen(b), 30)
    heard = await asyncio.wait_for(heard_a, 30)
    a_steps_first = [at - sent for at, _ in heard if sent < at < heard_b[0][0]]
    assert len(a_steps_first) >= 2, ("a's step in flight, then one more, before b's", a_steps_first)
    assert heard_b[0][0] - sent > FIRST_AUDIO_TARGET_S, "saturated, b waits for its first audio"
    assert stalls(heard, after=sent) < 0.05


async def test_cancel_still_stops_a_budgeted_step(fake):
    scheduler, _ = fake(frame_s=0.02)
    job = scheduler.submit("s", request("400", "s"))
    await asyncio.wait_for(job.audio.get(), 10)
    await asyncio.sleep(0.1)
    started = asyncio.get_running_loop().time()
    scheduler.cancel(job)
    after = scheduler.submit("s", request("20", "next"))
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
