"""The window plan: which frames of a segment each decoder step gets (the engines decode whatever
frame ranges they are given: `tts/engines/decode.py`).

The plan comes in steps. The first step is one small window (fast first audio); each next step spans
`growth` times the frames of the last, up to `max_frames` (throughput: fewer context frames computed
twice; fourfold keeps the second step short enough that the gap after the first one stays small). A
remainder shorter than half a step joins the last step. With `lanes` > 1 a step after the first is
split evenly into up to that many windows of at least MIN_LANE_FRAMES, which the engine decodes side by
side, each on one thread: on a CPU, two one-thread decoders get through about a quarter more frames
than one decoder on two threads (measured in tts/README.md), and the first window keeps every thread
for itself. A segment is decoded step by step as the plan says by `steps.py`.

That fixed plan (`steps`) is what a step is without a listener to keep ahead of (tools, tests); a
session's first window may be stretched to outlast the steps that must come before its next one
(`cover_s`). Given a budget, the seconds until the listener would run out of audio
(the scheduler knows: `scheduler.py`), `WindowPlan.step` sizes the next step from how fast this
machine decodes instead (`speed.py`: measured at load, then updated from every step it times): the
longest step, up to `max_frames`, whose predicted time fits BUDGET_SHARE of the budget, never shorter
than MIN_STEP_FRAMES. So a listener with 0.3 s of audio buffered gets a short step soon, and one with
seconds buffered gets long steps (fewer context frames decoded twice, more sessions served).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from tts.config import TTSConfig
from tts.engines.decode import FRAME_S
from tts.scheduling.speed import DecodeSpeed

# A step is split across lanes only into windows this long or longer. Windows of 18-36 frames made
# Whisper mishear small words ("It's shipped", "We receive the payment"): WER 0.042-0.055 over 28
# texts, against 0.029 whole-segment and 0.029-0.032 with no window under 48 frames after the first.
MIN_LANE_FRAMES = 48
# A budgeted step is planned to take at most this share of the time the listener has left: the speed
# estimate is a typical step, and the rest covers a slower one, the encoder, the socket and the
# scheduler's own turn (its policy: scheduler.py).
BUDGET_SHARE = 0.75
# A stretched first window (`WindowPlan.step`'s `cover_s`) lasts this much longer than the time it must
# cover: a tenth, not a quarter, because every frame of it is paid for in first audio (7-8 ms a frame
# on 2 cores).
FIRST_COVER_SHARE = 0.9
# ... and grows at most this many times: every frame of it is paid for in first audio. A session alone
# never stretches far (it covers its own next step: 12-14 frames, 163-186 ms of first audio on a quiet
# 2-core CPU); three arriving together need 30-45 frames each to outlast the others' first turns, and
# with twice (24 frames) each of them stalled once, 0.1-0.3 s, at the start (BENCHMARKS.md, "Playback").
# Four times costs at most 36 frames, about 0.27 s on that CPU.
FIRST_STRETCH = 4
# The shortest step a budget may ask for after a segment's first window: half of MIN_LANE_FRAMES, so a
# listener 0.3 s from a gap (the first window's audio) can be served in time on 2 cores (about 0.2 s for
# 24 frames and their context). Whisper hears streams of such steps as it hears whole-segment audio
# (tests/tts/scheduling/test_plan.py, the shortest budgeted steps); the fixed plan keeps its longer windows.
MIN_STEP_FRAMES = 24


@dataclass(frozen=True)
class WindowPlan:
    first_frames: int
    max_frames: int
    context_frames: int
    growth: int = 4
    lanes: int = 1

    def __post_init__(self) -> None:
        if self.first_frames < 0 or self.context_frames < 0:
            raise ValueError("window sizes must not be negative")
        if self.first_frames and self.max_frames < self.first_frames:
            raise ValueError("the largest window must be at least the first window")
        if self.growth < 1:
            raise ValueError("windows must not shrink (growth >= 1)")
        if self.lanes < 1:
            raise ValueError("a step needs at least one lane")

    @classmethod
    def from_config(cls, config: TTSConfig, lanes: int = 1) -> WindowPlan:
        return cls(
            config.window_first_frames,
            config.window_max_frames,
            config.window_context_frames,
            config.window_growth,
            lanes,
        )

    def steps(self, frames: int) -> list[list[tuple[int, int]]]:
        """Output frame ranges [start, stop) covering `frames`, in order, grouped into steps of at most
        `lanes` windows decoded side by side; one step of one range when windowing is off."""
        steps = [self.step(0, 0, frames)]
        while (start := steps[-1][-1][1]) < frames:
            steps.append(self.step(start, len(steps), frames))
        return steps

    def step(
        self,
        start: int,
        index: int,
        frames: int,
        budget_s: float | None = None,
        speed: DecodeSpeed | None = None,
        cover_s: float = 0.0,
    ) -> list[tuple[int, int]]:
        """The segment's step number `index`, from frame `start` of `frames`. Without a budget, the fixed
        plan: a step spans `growth` times the last, up to `max_frames`, and a remainder under half a
        step joins it; a first window (`first_frames`) grows, up to FIRST_STRETCH times, until its
        audio lasts `cover_s` (the time, by `speed`, until the listener's next step can be done) with
        a tenth to spare. With `budget_s` (seconds until the listener runs out) and `speed`, the longest
        step whose predicted time fits BUDGET_SHARE of the budget, from MIN_STEP_FRAMES (a segment's
        first window: `first_frames`) up to `max_frames`; a remainder shorter than that floor joins it.
        When even the floor would not be done within the budget, the listener waits whatever the step,
        and the fixed plan's step is taken (its growth spends the least time on context frames)."""
        if not self.first_frames or frames <= self.first_frames:
            return [(0, frames)]
        if index == 0 and budget_s is None:
            covering = math.ceil(cover_s / FIRST_COVER_SHARE / FRAME_S)
            stop = min(frames, max(self.first_frames, min(covering, FIRST_STRETCH * self.first_frames)))
            return [(0, frames if frames - stop < stop // 2 else stop)]
        floor = self.first_frames if index == 0 else MIN_STEP_FRAMES
        if (
            budget_s is None
            or speed is None
            or speed.seconds(self._decoded(start, floor, frames, index)) > budget_s
        ):
            # No listener, or one that will wait whatever the step: the fixed plan, whose steps grow
            # (shorter steps would only spend more of the time on context frames and stall longer).
            span = min(self.max_frames, self.first_frames * self.growth**index)
            stop = min(frames, start + span)
            if frames - stop < span // 2:
                stop = frames
            return self._split(start, stop, index, frames)
        span = floor
        for candidate in range(self.max_frames, floor, -4):
            stop = min(frames, start + candidate)
            if speed.seconds(self._decoded(start, stop - start, frames, index)) <= BUDGET_SHARE * budget_s:
                span = candidate
                break
        stop = min(frames, start + span)
        if frames - stop < floor:
            stop = frames
        return self._split(start, stop, index, frames)

    def _split(self, start: int, stop: int, index: int, frames: int) -> list[tuple[int, int]]:
        """[start, stop) as one window, or after a segment's first step evenly across the lanes, each
        window at least MIN_LANE_FRAMES long."""
        lanes = max(1, min(self.lanes, (stop - start) // MIN_LANE_FRAMES)) if index else 1
        bounds = [start + (stop - start) * lane // lanes for lane in range(lanes + 1)]
        return list(itertools.pairwise(bounds))

    def _decoded(self, start: int, span: int, frames: int, index: int = 1) -> list[int]:
        """Frames each window of the step [start, start + span) decodes, its context included."""
        return [
            min(frames, stop + self.context_frames) - max(0, begin - self.context_frames)
            for begin, stop in self._split(start, min(frames, start + span), index, frames)
        ]

    def windows(self, frames: int) -> list[tuple[int, int]]:
        """Every window of `steps`, in order."""
        return [window for step in self.steps(frames) for window in step]
