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

That fixed plan (`steps`) is what a step is without a listener to keep ahead of (tools, tests). With the
decoder's measured speed, a segment's first window is the ramp's (`first_window`): the shortest one that
the steps after it can follow without a gap, each computed while the audio before it plays, on an engine
shared by `sharing` sessions taking turns; so a slower CPU (or a busier engine) gets a somewhat longer
first window, not a fixed stretch that is too short there and too long here. A listener starts only
when the audio computed for it (its lead) suffices at the speed the last step showed (`scheduler.py`);
when the first window's step ran slower than predicted (a busier host), the lead grows by the ramp's
shortest step from where it is (`ramp`), not by the fixed plan's, which would compute the rest of a
short sentence before a word is heard. Given a budget, the seconds until the listener would run out of
audio (the scheduler knows: `picking.py`), `WindowPlan.step` sizes the next step from how fast this
machine decodes instead (`speed.py`: measured at load, then updated from every step it times): the
longest step, up to `max_frames`, whose predicted time fits BUDGET_SHARE of the budget, never shorter
than MIN_STEP_FRAMES. So a listener with 0.3 s of audio buffered gets a short step soon, and one with
seconds buffered gets long steps (fewer context frames decoded twice, more sessions served); and a
step alone on the engine with time to spare also hears the segment before it (`history`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
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
# The shortest step a budget may ask for after a segment's first window: half of MIN_LANE_FRAMES, so a
# listener 0.3 s from a gap (the first window's audio) can be served in time on 2 cores (about 0.2 s for
# 24 frames and their context). Whisper hears streams of such steps as it hears whole-segment audio
# (tests/tts/scheduling/test_plan.py, the shortest budgeted steps: 40 words, no error more with the
# `matmul` graph, one with AVX2's `conv` graph); the fixed plan keeps its longer windows.
MIN_STEP_FRAMES = 24
# A step's history (`WindowPlan.history`) is tried from the most down in steps of this many frames.
HISTORY_STEP_FRAMES = 8


@dataclass(frozen=True)
class Work:
    """A segment still to compute, as the ramp sees it: its `frames`, the time its text side will take
    (0 once run), and the frame it is computed from (`start`)."""

    frames: int
    text_s: float = 0.0
    start: int = 0


@dataclass(frozen=True)
class WindowPlan:
    first_frames: int
    max_frames: int
    context_frames: int
    growth: int = 4
    lanes: int = 1
    history_frames: int = 0

    def __post_init__(self) -> None:
        if self.first_frames < 0 or self.context_frames < 0 or self.history_frames < 0:
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
            config.window_history_frames,
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
        sharing: int = 0,
        later: Sequence[Work] = (),
        lead_s: float | None = None,
    ) -> list[tuple[int, int]]:
        """The segment's step number `index`, from frame `start` of `frames`. Without a budget, the fixed
        plan: a step spans `growth` times the last, up to `max_frames`, and a remainder under half a
        step joins it; with `speed` and `sharing` (the sessions taking turns on the engine, this one
        included) a first window is the ramp's (`first_window`, followed by the `later` work). With
        `budget_s` (seconds until the listener runs out) and `speed`, the longest step whose predicted
        time fits BUDGET_SHARE of the budget, from MIN_STEP_FRAMES (a segment's first window:
        `first_frames`) up to `max_frames`; a remainder shorter than that floor joins it. When even the
        floor would not be done within the budget, the listener waits whatever the step, and the fixed
        plan's step is taken (its growth spends the least time on context frames). With `lead_s`
        instead, the audio computed for a listener who has not started yet because it did not suffice
        (`scheduler.py`), the lead grows by the ramp's shortest step after which it does (`ramp`), at the
        speed the last step showed (`DecodeSpeed.lately`, as the scheduler checks the lead)."""
        if not self.first_frames or frames <= self.first_frames:
            return [(0, frames)]
        if index == 0 and budget_s is None:
            stop = self.first_frames
            if speed is not None and sharing:
                stop = self.first_window(frames, speed, sharing, later)
            return [(0, frames if frames - stop < stop // 2 else stop)]
        if budget_s is None and lead_s is not None and speed is not None and sharing:
            stop = start + self.ramp(start, frames, speed.lately(BUDGET_SHARE), sharing, later, lead_s)
            if frames - stop < MIN_STEP_FRAMES:
                stop = frames
            return self._split(start, stop, index, frames)
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

    def history(
        self,
        step: list[tuple[int, int]],
        frames: int,
        budget_s: float | None,
        speed: DecodeSpeed | None,
        sharing: int = 1,
    ) -> int:
        """Frames before each of `step`'s windows its decoder is given (its left context): more than
        `context_frames`, up to `history_frames` back to the segment's start, when the step is budgeted,
        the engine is this session's alone (`sharing` <= 1: no other session waits for the longer step)
        and the step still fits BUDGET_SHARE of `budget_s`; otherwise `context_frames`. The decoder
        normalises each window over the frames it is given (instance norms in its AdaIN blocks), so a
        window that hears the segment so far sounds more like the whole segment (DistillMOS through the
        container: tts/README.md "Streaming inside a segment"). Only where time is spare, so neither first
        audio (the steps before the listener starts have no budget) nor another session's turn waits."""
        context = self.context_frames
        most = min(self.history_frames, step[0][0])
        if most <= context or budget_s is None or speed is None or sharing > 1:
            return context
        share = BUDGET_SHARE * budget_s
        for history in range(most, context, -HISTORY_STEP_FRAMES):
            if speed.seconds(self._padded_lengths(step, frames, history)) <= share:
                return history
        return context

    def first_window(
        self, frames: int, speed: DecodeSpeed, sharing: int = 1, later: Sequence[Work] = ()
    ) -> int:
        """The ramp (`ramp`) from a segment's start with nothing computed ahead: the shortest first
        window, from `first_frames` up to `max_frames`, after which every step of this segment and of
        the `later` work can be computed while the audio before it plays."""
        return self.ramp(0, frames, speed, sharing, later)

    def ramp(
        self,
        start: int,
        frames: int,
        speed: DecodeSpeed,
        sharing: int = 1,
        later: Sequence[Work] = (),
        lead_s: float = 0.0,
    ) -> int:
        """The shortest span from frame `start` (at least `first_frames` from a segment's start, else
        MIN_STEP_FRAMES, at most `max_frames` and what is left) after which a listener with `lead_s`
        of audio computed ahead and the span's own never waits for the rest of this segment and the
        `later` work (`follows`). Found by bisection: a longer span never makes what follows harder.
        When not even the longest does (an engine slower than real time), the longest: the scheduler
        then holds the audio back until enough is computed (`follows` again, `scheduler.py`)."""
        longest = min(frames - start, self.max_frames)
        low = min(longest, self.first_frames if start == 0 else MIN_STEP_FRAMES)

        def enough(span: int) -> bool:
            work = [Work(frames, 0.0, start + span), *later]
            return self.follows(lead_s + span * FRAME_S, work, speed, sharing)

        if enough(low):
            return low
        if not enough(longest):
            return longest
        high = longest
        while high - low > 1:
            middle = (low + high) // 2
            if enough(middle):
                high = middle
            else:
                low = middle
        return high

    def follows(self, buffered_s: float, work: Sequence[Work], speed: DecodeSpeed, sharing: int = 1) -> bool:
        """Whether a listener with `buffered_s` of audio ahead never waits while `work` (segments in
        order, the first from its frame `start`) is computed: each step, sized by `step` to the audio
        buffered (its turn comes after `sharing - 1` others' of the same length), and each later
        segment's text side, is predicted to take at most BUDGET_SHARE of what is buffered when it
        starts: D(n_k+1) <= share * buffered, the buffered audio growing by every step's frames and
        shrinking by every turn's time."""
        buffered = buffered_s
        for segment in work:
            start, frames = segment.start, segment.frames
            index = 1 if start else 0
            took = sharing * segment.text_s
            if took > BUDGET_SHARE * buffered:
                return False
            buffered -= took
            while start < frames:
                step = self.step(start, index, frames, buffered / sharing, speed)
                stop = step[-1][1]
                took = sharing * speed.seconds(self._decoded(start, stop - start, frames, index))
                if took > BUDGET_SHARE * buffered:
                    return False
                buffered += (stop - start) * FRAME_S - took
                start, index = stop, index + 1
        return True

    def _split(self, start: int, stop: int, index: int, frames: int) -> list[tuple[int, int]]:
        """[start, stop) as one window, or after a segment's first step evenly across the lanes, each
        window at least MIN_LANE_FRAMES long."""
        lanes = max(1, min(self.lanes, (stop - start) // MIN_LANE_FRAMES)) if index else 1
        bounds = [start + (stop - start) * lane // lanes for lane in range(lanes + 1)]
        return list(itertools.pairwise(bounds))

    def _decoded(self, start: int, span: int, frames: int, index: int = 1) -> list[int]:
        """Frames each window of the step [start, start + span) decodes, its context included."""
        step = self._split(start, min(frames, start + span), index, frames)
        return self._padded_lengths(step, frames, self.context_frames)

    def _padded_lengths(self, step: list[tuple[int, int]], frames: int, history: int) -> list[int]:
        """Frames each window of `step` decodes with `history` frames before it (`history`)."""
        return [min(frames, stop + self.context_frames) - max(0, begin - history) for begin, stop in step]

    def windows(self, frames: int) -> list[tuple[int, int]]:
        """Every window of `steps`, in order."""
        return [window for step in self.steps(frames) for window in step]
