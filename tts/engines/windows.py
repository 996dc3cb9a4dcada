"""Streaming one segment's audio window by window: which frames each decoder call gets, and how the
pieces are stitched.

Kokoro is not autoregressive: the text side yields, for a whole segment at once, features per aligned
frame; the decoder (the ~95% of the work) turns frames into audio, a fixed number of samples per frame.
Its convolutions see a bounded neighbourhood, so a window of frames can be decoded on its own if it is
given `context` frames on each side, whose audio is then dropped. The decoder also normalises (instance
norm) and quantizes (dynamic int8) over whatever length it is given, so a window never equals the
whole-segment result exactly; the context makes the two close, and a short crossfade at each seam hides
the rest (fidelity is measured against whole-segment synthesis in tests/tts/test_windows.py).

The plan comes in steps. The first step is one small window (fast first audio); each next step spans
`growth` times the frames of the last, up to `max_frames` (throughput: fewer context frames computed
twice; fourfold keeps the second step short enough that the gap after the first one stays small). A
remainder shorter than half a step joins the last step. With `lanes` > 1 a step after the first is
split evenly into up to that many windows of at least MIN_LANE_FRAMES, which the engine decodes side by
side, each on one thread: on a CPU, two one-thread decoders get through about a quarter more frames
than one decoder on two threads (measured in tts/README.md), and the first window keeps every thread
for itself. Any engine that decodes a list of frame ranges [start, stop) can be driven by
`WindowedDecode`.

That fixed plan (`steps`) is what a step is without a listener to keep ahead of (tools, tests); a
session's first window may be stretched to outlast the steps that must come before its next one
(`cover_s`). Given a budget, the seconds until the listener would run out of audio
(the scheduler knows: `tts/scheduler.py`), `WindowPlan.step` sizes the next step from how fast this
machine decodes instead (`DecodeSpeed`: measured at load, then updated from every step it times): the
longest step, up to `max_frames`, whose predicted time fits BUDGET_SHARE of the budget, never shorter
than MIN_STEP_FRAMES. So a listener with 0.3 s of audio buffered gets a short step soon, and one with
seconds buffered gets long steps (fewer context frames decoded twice, more sessions served).

The harmonic source (a sine generator driven by F0: the fundamental and 8 overtones) integrates F0 with a
cumulative sum that starts at zero at the first frame a decoder call is given. `source_phase` is that sum
over the whole segment, computed as the decoder computes it; `phase_before(source_phase, frame)` is what
a window starting at `frame` must add to its own sum so that the source runs on without a jump.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tts.config import SAMPLE_RATE, TTSConfig

CROSSFADE_SAMPLES = 240  # 10 ms at 24 kHz, taken from the previous window's right context
HARMONICS = 9  # the harmonic source: the fundamental and 8 overtones
SOURCE_UPSAMPLE = 300  # audio samples per F0 step
SAMPLES_PER_FRAME = 2 * SOURCE_UPSAMPLE  # two F0 steps per aligned frame
# A step is split across lanes only into windows this long or longer. Windows of 18-36 frames made
# Whisper mishear small words ("It's shipped", "We receive the payment"): WER 0.042-0.055 over 28
# texts, against 0.029 whole-segment and 0.029-0.032 with no window under 48 frames after the first.
MIN_LANE_FRAMES = 48
FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # 25 ms of audio per aligned frame
# A budgeted step is planned to take at most this share of the time the listener has left: the speed
# estimate is a typical step, and the rest covers a slower one, the encoder, the socket and the
# scheduler's own turn (its policy: tts/scheduler.py).
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
# (tests/tts/test_windows.py, the shortest budgeted steps); the fixed plan keeps its longer windows.
MIN_STEP_FRAMES = 24
# How far one timed step moves the per-frame estimate towards what it measured: a busy host shows
# within a few steps, one slow step (a page fault, another process) does not halve every plan after it.
SPEED_SMOOTHING = 0.2
_HARMONIC_NUMBERS = np.arange(1, HARMONICS + 1, dtype=np.float32)


def source_phase(f0: np.ndarray) -> np.ndarray:
    """[F0 steps + 1, HARMONICS] float64: the harmonic source's cumulative phase (in turns / 300) before
    each F0 step, as the decoder computes it: per step, frac(h * F0 / sample rate)."""
    steps = np.asarray(f0, dtype=np.float32).reshape(-1, 1) * _HARMONIC_NUMBERS / np.float32(SAMPLE_RATE)
    steps = (steps - np.floor(steps)).astype(np.float64)
    return np.concatenate([np.zeros((1, HARMONICS)), np.cumsum(steps, axis=0)])


def phase_before(phase: np.ndarray, frame: int) -> np.ndarray:
    """float32 [HARMONICS]: what a window starting at `frame` adds to its source's cumulative sum (the
    whole turns dropped, so float32 keeps its precision however long the segment)."""
    turns = phase[2 * frame] * SOURCE_UPSAMPLE
    return ((turns - np.floor(turns)) / SOURCE_UPSAMPLE).astype(np.float32)


@dataclass
class DecodeSpeed:
    """How long this machine's decoder takes for one step: `call_s + frame_s * n` for one window of `n`
    decoded frames (its context included) on every thread, `call_s + lane_frame_s * n` for windows
    decoded side by side on one-thread lanes, `n` the longest of them. `measure` takes it at load;
    `observe` moves it towards every step timed after that, so a busier host gets shorter steps."""

    call_s: float
    frame_s: float
    lane_frame_s: float

    def seconds(self, decoded: Sequence[int]) -> float:
        per_frame = self.frame_s if len(decoded) == 1 else self.lane_frame_s
        return self.call_s + per_frame * max(decoded)

    def observe(self, decoded: Sequence[int], seconds: float) -> None:
        measured = max(0.0, seconds - self.call_s) / max(decoded)
        if len(decoded) == 1:
            self.frame_s += SPEED_SMOOTHING * (measured - self.frame_s)
        else:
            self.lane_frame_s += SPEED_SMOOTHING * (measured - self.lane_frame_s)

    @classmethod
    def measure(cls, decode: DecodeFn, frames: int, lanes: int) -> DecodeSpeed:
        """Time `decode` (an engine's `decode_windows` over one segment of `frames` frames, at least 40)
        on a short and a long window, and on `lanes` windows side by side; the fastest of two runs of
        each, so the figure is the machine's, not a first run's."""
        if frames < 40:
            raise ValueError(f"timing the decoder needs a segment of 40 frames or more, got {frames}")

        def fastest(ranges: list[tuple[int, int]]) -> float:
            times = []
            for _ in range(2):
                started = time.perf_counter()
                decode(ranges)
                times.append(time.perf_counter() - started)
            return min(times)

        short, long = 16, min(frames, 64)
        short_s, long_s = fastest([(0, short)]), fastest([(0, long)])
        frame_s = max(1e-4, (long_s - short_s) / (long - short))
        call_s = max(0.0, short_s - frame_s * short)
        if lanes < 2:
            return cls(call_s, frame_s, frame_s)
        width = min(frames // lanes, 48)
        lane_s = fastest([(lane * width, (lane + 1) * width) for lane in range(lanes)])
        return cls(call_s, frame_s, max(1e-4, (lane_s - call_s) / width))


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


DecodeFn = Callable[[list[tuple[int, int]]], list[np.ndarray]]


class WindowedDecode:
    """One segment's audio, one step per `next()` call. `decode(ranges)` returns, for each frame range
    [start, stop), its audio decoded with only those frames as input. With `speed`, every step is
    timed into it (`DecodeSpeed.observe`), and `next(budget_s)` sizes the step to the budget."""

    def __init__(
        self,
        decode: DecodeFn,
        frames: int,
        samples_per_frame: int,
        plan: WindowPlan,
        speed: DecodeSpeed | None = None,
    ) -> None:
        self._decode = decode
        self._frames = frames
        self._hop = samples_per_frame
        self._plan = plan
        self._speed = speed
        self._context = plan.context_frames
        self._start = 0
        self._steps_taken = 0
        self.windows: list[tuple[int, int]] = []  # every window decoded so far, in order
        self._tail: np.ndarray | None = None
        crossfade = min(CROSSFADE_SAMPLES, self._context * samples_per_frame)
        self._fade_in = np.linspace(0.0, 1.0, crossfade + 2, dtype=np.float32)[1:-1]

    @property
    def done(self) -> bool:
        return self._steps_taken > 0 and self._start >= self._frames

    @property
    def started(self) -> bool:
        return self._start > 0

    def next(self, budget_s: float | None = None, cover_s: float = 0.0) -> np.ndarray:
        """Decode the next step (`WindowPlan.step`: the fixed plan, its first window stretched to last
        `cover_s`, or sized to `budget_s`, the seconds until the listener runs out of audio); return
        the audio it completes (each window crossfaded with the one before it)."""
        step = self._plan.step(self._start, self._steps_taken, self._frames, budget_s, self._speed, cover_s)
        padded = [
            (max(0, start - self._context), min(self._frames, stop + self._context)) for start, stop in step
        ]
        started = time.perf_counter()
        decoded = self._decode(padded)
        if self._speed is not None:
            self._speed.observe([stop - start for start, stop in padded], time.perf_counter() - started)
        self._steps_taken += 1
        self._start = step[-1][1]
        self.windows += step
        pieces = [
            self._stitch(audio, start - lo, stop - lo)
            for (start, stop), (lo, _), audio in zip(step, padded, decoded, strict=True)
        ]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def _stitch(self, audio: np.ndarray, begin_frame: int, end_frame: int) -> np.ndarray:
        """The window's own frames out of its decoded audio, faded in over the previous window's right
        context; keeps this window's right context for the next one (none after the segment's end)."""
        begin, end = begin_frame * self._hop, end_frame * self._hop
        piece = audio[begin:end].copy()
        if self._tail is not None:
            fade = self._fade_in[: len(self._tail)]
            head = piece[: len(fade)]
            piece[: len(fade)] = (
                self._tail[: len(head)] * (1.0 - fade[: len(head)]) + head * fade[: len(head)]
            )
        self._tail = audio[end : end + len(self._fade_in)]
        return piece
