"""One segment's audio, one planned step per `next()` call: the plan (`plan.py`) says which frames the
step gets, the engine's `WindowDecoder` decodes and stitches them, and, with a `DecodeSpeed`, every step
is timed into it and `next(budget_s)` sizes the step to the budget. A step decoded in one pass with
other sessions' steps comes in three calls instead: `plan` (its frames), `batch` (its windows, for the
engine's `decode_batch`) and `complete` (their audio, stitched)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from tts.engines.base import Features, RunFlag, SpeechEngine, Window
from tts.engines.decode import WindowDecoder
from tts.scheduling.plan import WindowPlan, Work
from tts.scheduling.speed import DecodeSpeed


class WindowedDecode:
    def __init__(
        self,
        decoder: WindowDecoder,
        plan: WindowPlan,
        speed: DecodeSpeed | None = None,
        features: Features | None = None,
        run_flag: RunFlag | None = None,
    ) -> None:
        """`features` and `run_flag`: the segment's, for its steps' windows in a batch (`batch`)."""
        self._decoder = decoder
        self._plan = plan
        self._speed = speed
        self._features = features
        self._run_flag = run_flag
        self._steps_taken = 0
        self._history: int | None = None
        """The history of the step last planned (`WindowPlan.history`), which `batch` and `complete` use."""

    @property
    def done(self) -> bool:
        return self._steps_taken > 0 and self._decoder.position >= self._decoder.frames

    @property
    def started(self) -> bool:
        return self._decoder.position > 0

    @property
    def remaining(self) -> Work:
        """What is left of the segment, as the ramp sees it."""
        return Work(self._decoder.frames, 0.0, self._decoder.position)

    @property
    def windows(self) -> list[tuple[int, int]]:
        """Every window decoded so far, in order."""
        return self._decoder.windows

    def next(
        self,
        budget_s: float | None = None,
        sharing: int = 0,
        later: Sequence[Work] = (),
        lead_s: float | None = None,
    ) -> np.ndarray:
        """Decode the next step (`WindowPlan.step`: the fixed plan, its first window the ramp's for an
        engine shared by `sharing` sessions, sized to `budget_s`, the seconds until the listener runs
        out of audio, or the ramp's step that makes `lead_s`, the audio computed for a listener not yet
        started, enough; the segment is followed by the `later` work); return the audio it completes."""
        step = self.plan(budget_s, sharing, later, lead_s)
        decoder = self._decoder
        started = time.perf_counter()
        audio = decoder.decode(step, self._history)
        if self._speed is not None:
            decoded = [stop - start for start, stop in decoder.padded(step, self._history)]
            self._speed.observe(decoded, time.perf_counter() - started)
        self._steps_taken += 1
        return audio

    @property
    def steps_taken(self) -> int:
        return self._steps_taken

    def plan(
        self,
        budget_s: float | None = None,
        sharing: int = 0,
        later: Sequence[Work] = (),
        lead_s: float | None = None,
    ) -> list[tuple[int, int]]:
        """The next step's frame ranges (what `next` decodes); the history its windows are decoded with
        is the plan's for them (`WindowPlan.history`), kept for `batch` and `complete`."""
        decoder = self._decoder
        step = self._plan.step(
            decoder.position, self._steps_taken, decoder.frames, budget_s, self._speed, sharing, later, lead_s
        )
        self._history = self._plan.history(step, decoder.frames, budget_s, self._speed, sharing)
        return step

    def batch(self, step: list[tuple[int, int]]) -> list[Window]:
        """The step's windows (its frames and their context), for the engine's `decode_batch`."""
        if self._features is None:
            raise ValueError("a step decoded in a batch needs its segment's features (`windowed`)")
        return [
            Window(self._features, start, stop, self._run_flag)
            for start, stop in self._decoder.padded(step, self._history)
        ]

    def complete(self, step: list[tuple[int, int]], decoded: list[np.ndarray]) -> np.ndarray:
        """The audio the step completes, given its windows' audio (`batch`, decoded elsewhere)."""
        audio = self._decoder.complete(step, decoded, self._history)
        self._steps_taken += 1
        return audio


def windowed(
    engine: SpeechEngine,
    features: Features,
    plan: WindowPlan,
    speed: DecodeSpeed | None = None,
    run_flag: RunFlag | None = None,
) -> WindowedDecode:
    """`features`' segment, step by step as `plan` says (sized by `speed` when given a budget)."""
    decoder = engine.window_decoder(features, plan.context_frames, run_flag)
    return WindowedDecode(decoder, plan, speed, features, run_flag)
