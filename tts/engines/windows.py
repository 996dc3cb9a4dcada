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

The harmonic source (a sine generator driven by F0: the fundamental and 8 overtones) integrates F0 with a
cumulative sum that starts at zero at the first frame a decoder call is given. `source_phase` is that sum
over the whole segment, computed as the decoder computes it; `phase_before(source_phase, frame)` is what
a window starting at `frame` must add to its own sum so that the source runs on without a jump.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
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
        if not self.first_frames or frames <= self.first_frames:
            return [[(0, frames)]]
        steps: list[list[tuple[int, int]]] = []
        start, span = 0, self.first_frames
        while start < frames:
            stop = min(frames, start + span)
            if frames - stop < span // 2:
                stop = frames
            lanes = max(1, min(self.lanes, (stop - start) // MIN_LANE_FRAMES)) if steps else 1
            bounds = [start + (stop - start) * lane // lanes for lane in range(lanes + 1)]
            steps.append(list(itertools.pairwise(bounds)))
            start, span = stop, min(self.max_frames, span * self.growth)
        return steps

    def windows(self, frames: int) -> list[tuple[int, int]]:
        """Every window of `steps`, in order."""
        return [window for step in self.steps(frames) for window in step]


DecodeFn = Callable[[list[tuple[int, int]]], list[np.ndarray]]


class WindowedDecode:
    """One segment's audio, one step per `next()` call. `decode(ranges)` returns, for each frame range
    [start, stop), its audio decoded with only those frames as input."""

    def __init__(self, decode: DecodeFn, frames: int, samples_per_frame: int, plan: WindowPlan) -> None:
        self._decode = decode
        self._frames = frames
        self._hop = samples_per_frame
        self._context = plan.context_frames
        self._pending = plan.steps(frames)
        self._tail: np.ndarray | None = None
        crossfade = min(CROSSFADE_SAMPLES, self._context * samples_per_frame)
        self._fade_in = np.linspace(0.0, 1.0, crossfade + 2, dtype=np.float32)[1:-1]

    @property
    def done(self) -> bool:
        return not self._pending

    def next(self) -> np.ndarray:
        """Decode the next step; return the audio it completes (each window crossfaded with the one
        before it)."""
        step = self._pending.pop(0)
        padded = [
            (max(0, start - self._context), min(self._frames, stop + self._context)) for start, stop in step
        ]
        decoded = self._decode(padded)
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
