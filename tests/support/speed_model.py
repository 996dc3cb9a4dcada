"""A speed model of the engine, for the scheduler and plan tests that must hold at every CPU speed: it
is not a stub of the engine's behaviour but of its cost. Every decoder call sleeps `call_s` plus a cost
per decoded frame (context included) that makes a full step compute `realtime` seconds of audio a
second; windows side by side on lanes cost what two one-thread decoders cost on a CPU (each a quarter
faster in all than one decoder on two threads: tts/README.md); every segment's text side sleeps
`text_side_s`. With `batch` > 1 it decodes windows of several sessions in one pass (`decode_batch`),
costing `call_s` plus `batch_frame_s` per frame of every window padded to the longest: what the torch
engine's pass costs (on a GPU a frame in a batch costs a small part of one alone; on a CPU about as
much). It returns silence, through the real window plan, `WindowedDecode` and `WindowDecoder`, and its
calibration is its own figures (what `calibrate` would measure on it).

A text is one segment of `len(text)` frames (one phoneme token a character, one frame a token), so the
scheduler's estimate of a queued sentence (its characters) is its length.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from tts.config import SAMPLES_PER_FRAME
from tts.engines.base import CancelFlag, SynthesisCancelled, Window
from tts.engines.decode import FRAME_S, WindowDecoder
from tts.scheduling.admission import Queued
from tts.scheduling.calibration import Calibration, TextSpeed
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import Job, Scheduler
from tts.scheduling.speed import DecodeSpeed
from tts.text.script import Script, Segment
from tts.wire.protocol import Synthesize

# Two one-thread lanes get through this many times the frames of one decoder on both threads.
LANE_GAIN = 1.25


class ModelFeatures:
    def __init__(self, frames: int) -> None:
        self.frames = frames


class SpeedModelEngine:
    name = "speed-model"
    device = "sleep"

    def __init__(
        self,
        realtime: float,
        text_side_s: float = 0.0,
        lanes: int = 1,
        call_s: float = 0.0,
        batch: int = 1,
        batch_frame_s: float | None = None,
    ) -> None:
        self.realtime = realtime
        self.frame_s = FRAME_S / realtime
        self.lane_frame_s = self.frame_s * lanes / LANE_GAIN if lanes > 1 else self.frame_s
        self.call_s = call_s
        self.text_side_s = text_side_s
        self.lanes = lanes
        self.batch = batch
        self.batch_frame_s = self.frame_s if batch_frame_s is None else batch_frame_s
        self.plan = WindowPlan(12, 120, 8, 4, lanes)
        self.steps: list[tuple[str, list[tuple[int, int]]]] = []  # (request id, padded windows)
        self.batches: list[list[str]] = []  # the request ids of each pass over several sessions' windows
        self._current = ""
        self._requests: dict[int, str] = {}  # id(run flag) -> request id, for `decode_batch`

    def calibration(self) -> Calibration:
        return Calibration(
            f"speed-model {self.realtime}x",
            TextSpeed(self.text_side_s, 0.0),
            DecodeSpeed(
                self.call_s, self.frame_s, self.lane_frame_s, self.batch_frame_s if self.batch > 1 else 0.0
            ),
            frames_per_token=1.0,
            tokens_per_char=1.0,
        )

    def run_flag(self) -> CancelFlag:
        return CancelFlag()

    def segments(self, text: str, lang: str) -> list[list[int]]:
        return [[1] * len(text)]

    def speech_segments(self, script: Script, lang: str, timed: bool = False, run_flag=None) -> list[Segment]:
        return [
            Segment(tuple(token for tokens in self.segments(script.spoken(lang), lang) for token in tokens))
        ]

    def features(self, tokens, voice, speed, run_flag=None) -> ModelFeatures:
        time.sleep(self.text_side_s)
        return ModelFeatures(len(tokens))

    def decode_windows(self, features: ModelFeatures, ranges: list[tuple[int, int]], run_flag=None):
        return self._decode(ranges, run_flag or CancelFlag())

    def window_decoder(
        self, features: ModelFeatures, context_frames: int, run_flag: CancelFlag
    ) -> WindowDecoder:
        rid = self._current

        def decode(ranges: list[tuple[int, int]]) -> list[np.ndarray]:
            self.steps.append((rid, ranges))
            return self._decode(ranges, run_flag)

        return WindowDecoder(decode, features.frames, context_frames)

    def decode_batch(self, windows: list[Window]) -> list[np.ndarray | None]:
        """Windows of any sessions in one pass: `call_s` and `batch_frame_s` a frame of each window
        padded to the longest; None for a cancelled session's window."""
        if len(windows) == 1:
            (window,) = windows
            return self._decode([(window.start, window.stop)], window.run_flag or CancelFlag())
        rids = [self._requests.get(id(window.run_flag), "") for window in windows]
        self.batches.append(rids)
        for rid in dict.fromkeys(rids):
            ranges = [(w.start, w.stop) for w, r in zip(windows, rids, strict=True) if r == rid]
            self.steps.append((rid, ranges))
        longest = max(window.frames for window in windows)
        self._wait(self.call_s + self.batch_frame_s * len(windows) * longest, lambda: False)
        return [
            None if window.cancelled else np.zeros(window.frames * SAMPLES_PER_FRAME, np.float32)
            for window in windows
        ]

    def _decode(self, ranges: list[tuple[int, int]], run_flag: CancelFlag) -> list[np.ndarray]:
        per_frame = self.frame_s if len(ranges) == 1 else self.lane_frame_s
        self._wait(self.call_s + per_frame * max(b - a for a, b in ranges), lambda: run_flag.terminate)
        return [np.zeros((b - a) * SAMPLES_PER_FRAME, np.float32) for a, b in ranges]

    @staticmethod
    def _wait(seconds: float, cancelled) -> None:
        deadline = time.perf_counter() + seconds
        while (left := deadline - time.perf_counter()) > 0:
            if cancelled():
                raise SynthesisCancelled()
            time.sleep(min(left, 0.002))


class SpeedModelScheduler(Scheduler):
    """Tells the speed model whose step it decodes."""

    def _run_steps(self, jobs: list[Job]) -> list:
        self._engine._current = jobs[0].request.request_id
        self._engine._requests = {id(job.run_options): job.request.request_id for job in jobs}
        return super()._run_steps(jobs)


def request(text: str, rid: str) -> Synthesize:
    return Synthesize(text=text, voice="jm_kumo", speed=1.0, format="pcm", lang="en-us", request_id=rid)


def sentence(frames: int) -> str:
    """A text the speed model speaks as `frames` frames."""
    return "x" * frames


async def listen(job: Job) -> tuple[list[tuple[float, float]], list[int]]:
    """(arrival, seconds of audio) of each step on the loop's clock, and the places in line it heard."""
    loop, heard, places = asyncio.get_running_loop(), [], []
    while (item := await job.audio.get()) is not None:
        if isinstance(item, Queued):
            places.append(item.position)
            continue
        assert isinstance(item, bytes), item
        heard.append((loop.time(), len(item) / 2 / 24_000))
    return heard, places


def stalls(heard: list[tuple[float, float]], after: float = 0.0) -> float:
    """Seconds a player that starts at the first audio and plays at real time waits for audio (for
    audio arriving after loop time `after`)."""
    if not heard:
        return 0.0
    played_until, waited = heard[0][0], 0.0
    for at, seconds in heard:
        waited += max(0.0, at - played_until) if at > after else 0.0
        played_until = max(played_until, at) + seconds
    return waited
