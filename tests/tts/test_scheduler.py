import asyncio

import pytest

from tts.protocol import Synthesize
from tts.scheduler import Job, Scheduler
from tts.streaming import AudioStats, audio_frames


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
async def scheduler(engine):
    scheduler = Scheduler(engine)
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
