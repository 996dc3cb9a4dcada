"""Backpressure in the container's scheduler: a session whose reader stops taking audio stops being
computed once it is AHEAD_LIMIT_S ahead; other sessions are served meanwhile; once the reader takes
audio again it gets everything, in order.

A fake engine (each decoder step one second of audio, numbered) keeps this exact and fast; the real
container with a client that stops reading is tests/reliability/test_container_slow_consumer.py.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from facts import SAMPLE_RATE
from tts.config import SAMPLES_PER_FRAME
from tts.engines.base import CancelFlag
from tts.engines.decode import WindowDecoder
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import AHEAD_LIMIT_BYTES, AHEAD_LIMIT_S, Job, Scheduler
from tts.text.script import Script, Segment
from tts.wire.audio import float_to_pcm16
from tts.wire.protocol import Synthesize

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(60)]

STEP_S = 1.0
STEPS_PER_JOB = 10
STEP_BYTES = int(STEP_S * SAMPLE_RATE) * 2
STEP_FRAMES = int(STEP_S * SAMPLE_RATE) // SAMPLES_PER_FRAME
# Every step STEP_FRAMES, no context: a segment of STEPS_PER_JOB steps is exactly that many.
PLAN = WindowPlan(first_frames=STEP_FRAMES, max_frames=STEP_FRAMES, context_frames=0, growth=1)


class FakeEngine:
    """One segment per text; records every step it computes, as (text, step number). Given no decoder
    speed, the scheduler claims no capacity and sizes no step."""

    batch = 1  # windows one after another, as SpeechEngine's default

    def __init__(self) -> None:
        self.computed: list[tuple[str, int]] = []
        self._texts: list[str] = []

    def run_flag(self) -> CancelFlag:
        return CancelFlag()

    def speech_segments(self, script: Script, lang: str, timed: bool = False, run_flag=None) -> list[Segment]:
        self._texts.append(script.spoken(lang))
        return [Segment((len(self._texts) - 1,))]

    def features(self, tokens: list[int], voice: str, speed: float, run_options: CancelFlag) -> str:
        return self._texts[tokens[0]]

    def window_decoder(self, features: str, context_frames: int, run_options: CancelFlag) -> WindowDecoder:
        def decode(ranges: list[tuple[int, int]]) -> list[np.ndarray]:
            time.sleep(0.002)  # a forward pass takes time
            number = len(self.computed)
            self.computed.append((features, number))
            return [
                np.full((b - a) * SAMPLES_PER_FRAME, number / 10_000, dtype=np.float32) for a, b in ranges
            ]

        return WindowDecoder(decode, STEPS_PER_JOB * STEP_FRAMES, context_frames)

    def computed_s(self, text_prefix: str) -> float:
        return STEP_S * sum(1 for text, _ in self.computed if text.startswith(text_prefix))


def request(text: str, rid: str) -> Synthesize:
    return Synthesize(text=text, voice="v", speed=1.0, format="pcm", lang="en-us", request_id=rid)


async def take_all(job: Job) -> bytes:
    pcm = bytearray()
    while (item := await job.audio.get()) is not None:
        assert not isinstance(item, BaseException), item
        pcm += item
    return bytes(pcm)


def expected_pcm(engine: FakeEngine, text: str) -> bytes:
    return b"".join(
        float_to_pcm16(np.full(int(STEP_S * SAMPLE_RATE), n / 10_000, dtype=np.float32))
        for t, n in engine.computed
        if t == text
    )


async def settle(engine: FakeEngine) -> None:
    """Wait until the engine has computed nothing new for 0.3 s (bounded by the test's timeout)."""
    while True:
        before = len(engine.computed)
        await asyncio.sleep(0.3)
        if len(engine.computed) == before:
            return


async def test_a_reader_that_stops_taking_audio_stops_synthesis_within_the_bound() -> None:
    engine = FakeEngine()
    scheduler = Scheduler(engine, PLAN)  # type: ignore[arg-type]
    scheduler.start()
    try:
        texts = [f"stalled {n}" for n in range(6)]  # 60 s of audio, none of it read
        stalled = [scheduler.submit("stalled", request(text, text)) for text in texts]
        await settle(engine)
        ran_ahead_s = engine.computed_s("stalled")
        print(f"\nwhile nobody read: computed {ran_ahead_s:g} s of 60 s; bound {AHEAD_LIMIT_S:g} s + a step")
        assert ran_ahead_s <= AHEAD_LIMIT_S + STEP_S, "synthesis ran ahead of a reader that takes nothing"
        assert scheduler.ahead_bytes["stalled"] <= AHEAD_LIMIT_BYTES + STEP_BYTES

        other = scheduler.submit("other", request("other", "other"))
        assert len(await asyncio.wait_for(take_all(other), 10)) == STEPS_PER_JOB * STEP_BYTES
        assert engine.computed_s("stalled") == ran_ahead_s, "the held session took no turn meanwhile"

        received = [await take_all(job) for job in stalled]  # the reader resumes, in message order
        assert [len(pcm) for pcm in received] == [STEPS_PER_JOB * STEP_BYTES] * len(texts)
        assert received == [expected_pcm(engine, text) for text in texts], "everything, in order"
        assert scheduler.ahead_bytes == {}, "nothing computed is left untaken"
    finally:
        await scheduler.stop()


async def test_cancelling_a_held_session_frees_its_count_and_its_turns() -> None:
    engine = FakeEngine()
    scheduler = Scheduler(engine, PLAN)  # type: ignore[arg-type]
    scheduler.start()
    try:
        jobs = [scheduler.submit("s", request(f"s {n}", f"s{n}")) for n in range(4)]
        await settle(engine)
        for job in jobs:
            scheduler.cancel(job)
        assert scheduler.ahead_bytes == {}
        after = scheduler.submit("s", request("after", "after"))
        assert len(await asyncio.wait_for(take_all(after), 10)) == STEPS_PER_JOB * STEP_BYTES
    finally:
        await scheduler.stop()
