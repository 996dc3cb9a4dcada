"""Streaming one segment's audio window by window: which frames each decoder call gets, and how the
pieces are stitched.

Kokoro is not autoregressive: the text side yields, for a whole segment at once, features per aligned
frame; the decoder (the ~95% of the work) turns frames into audio, a fixed number of samples per frame.
Its convolutions see a bounded neighbourhood, so a window of frames can be decoded on its own if it is
given `context` frames on each side, whose audio is then dropped. The decoder also normalises (instance
norm) and quantizes (dynamic int8) over whatever length it is given, so a window never equals the
whole-segment result exactly; the context makes the two close, and a short crossfade at each seam hides
the rest (fidelity is measured against whole-segment synthesis in tests/tts/test_windows.py).

The plan: the first window is small (fast first audio), each next one is `growth` times the last, up to
`max_frames` (throughput: fewer context frames computed twice; fourfold keeps the second window short
enough that the gap after the first one stays small). A remainder shorter than half a window joins the
last window. Any engine that offers `decode(features, start, stop) -> audio` for frames [start, stop)
can be driven by `WindowedDecode`.

The harmonic source (a sine generator driven by F0: the fundamental and 8 overtones) integrates F0 with a
cumulative sum that starts at zero at the first frame a decoder call is given. `source_phase` is that sum
over the whole segment, computed as the decoder computes it; `phase_before(source_phase, frame)` is what
a window starting at `frame` must add to its own sum so that the source runs on without a jump.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tts.config import SAMPLE_RATE, TTSConfig

CROSSFADE_SAMPLES = 240  # 10 ms at 24 kHz, taken from the previous window's right context
HARMONICS = 9  # the harmonic source: the fundamental and 8 overtones
SOURCE_UPSAMPLE = 300  # audio samples per F0 step
SAMPLES_PER_FRAME = 2 * SOURCE_UPSAMPLE  # two F0 steps per aligned frame
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

    def __post_init__(self) -> None:
        if self.first_frames < 0 or self.context_frames < 0:
            raise ValueError("window sizes must not be negative")
        if self.first_frames and self.max_frames < self.first_frames:
            raise ValueError("the largest window must be at least the first window")
        if self.growth < 1:
            raise ValueError("windows must not shrink (growth >= 1)")

    @classmethod
    def from_config(cls, config: TTSConfig) -> WindowPlan:
        return cls(
            config.window_first_frames,
            config.window_max_frames,
            config.window_context_frames,
            config.window_growth,
        )

    def windows(self, frames: int) -> list[tuple[int, int]]:
        """Output frame ranges [start, stop) covering `frames`; one range when windowing is off."""
        if not self.first_frames or frames <= self.first_frames:
            return [(0, frames)]
        ranges, start, size = [], 0, self.first_frames
        while start < frames:
            stop = min(frames, start + size)
            if frames - stop < size // 2:
                stop = frames
            ranges.append((start, stop))
            start, size = stop, min(self.max_frames, size * self.growth)
        return ranges


DecodeFn = Callable[[int, int], np.ndarray]


class WindowedDecode:
    """One segment's audio, one window per `next()` call. `decode(start, stop)` returns the audio of
    frames [start, stop) decoded with only those frames as input."""

    def __init__(self, decode: DecodeFn, frames: int, samples_per_frame: int, plan: WindowPlan) -> None:
        self._decode = decode
        self._frames = frames
        self._hop = samples_per_frame
        self._context = plan.context_frames
        self._pending = plan.windows(frames)
        self._tail: np.ndarray | None = None
        crossfade = min(CROSSFADE_SAMPLES, self._context * samples_per_frame)
        self._fade_in = np.linspace(0.0, 1.0, crossfade + 2, dtype=np.float32)[1:-1]

    @property
    def done(self) -> bool:
        return not self._pending

    @property
    def windows_left(self) -> int:
        return len(self._pending)

    def next(self) -> np.ndarray:
        """Decode the next window; return the audio it completes (crossfaded with the previous one)."""
        start, stop = self._pending.pop(0)
        lo, hi = max(0, start - self._context), min(self._frames, stop + self._context)
        audio = self._decode(lo, hi)
        begin, end = (start - lo) * self._hop, (stop - lo) * self._hop
        piece = audio[begin:end].copy()
        if self._tail is not None:
            fade = self._fade_in[: len(self._tail)]
            head = piece[: len(fade)]
            piece[: len(fade)] = (
                self._tail[: len(head)] * (1.0 - fade[: len(head)]) + head * fade[: len(head)]
            )
        self._tail = audio[end : end + len(self._fade_in)] if self._pending else None
        return piece
