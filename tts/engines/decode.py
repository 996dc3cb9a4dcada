"""The decode maths both engines share: a segment's audio decoded from whichever runs of its frames it is
given, and stitched into one stream. Which runs, and when, is the scheduler's (`tts/scheduling/`).

Kokoro is not autoregressive: the text side yields, for a whole segment at once, features per aligned
frame; the decoder (the ~95% of the work) turns frames into audio, SAMPLES_PER_FRAME samples per frame.
Its convolutions see a bounded neighbourhood, so a window of frames can be decoded on its own if it is
given `context` frames on each side, whose audio is then dropped. The decoder also normalises (instance
norm) and quantizes (dynamic int8) over whatever length it is given, so a window never equals the
whole-segment result exactly; the context makes the two close, and a short crossfade at each seam hides
the rest (fidelity is measured against whole-segment synthesis in tests/tts/engines/test_decode.py).

The harmonic source (a sine generator driven by F0: the fundamental and 8 overtones) integrates F0 with a
cumulative sum that starts at zero at the first frame a decoder call is given. `source_phase` is that sum
over the whole segment, computed as the decoder computes it; `phase_before(source_phase, frame)` is what
a window starting at `frame` must add to its own sum so that the source runs on without a jump.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from facts import SAMPLE_RATE
from tts.config import SAMPLES_PER_FRAME

CROSSFADE_SAMPLES = 240  # 10 ms at 24 kHz, taken from the previous window's right context
HARMONICS = 9  # the harmonic source: the fundamental and 8 overtones
SOURCE_UPSAMPLE = SAMPLES_PER_FRAME // 2  # audio samples per F0 step: two F0 steps per aligned frame
FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE  # 25 ms of audio per aligned frame
_HARMONIC_NUMBERS = np.arange(1, HARMONICS + 1, dtype=np.float32)

DecodeFn = Callable[[list[tuple[int, int]]], list[np.ndarray]]
"""An engine's decoder over one segment: for each frame range [start, stop), its audio decoded with
only those frames as input (`SpeechEngine.decode_windows`)."""


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


class WindowDecoder:
    """One segment's audio, from the runs of frames it is given in order: each window [start, stop) is
    decoded with `context_frames` on either side (within the segment), its own frames kept and faded
    in over the previous window's right context. `decode(ranges)` returns the audio those windows
    complete; in two halves, for windows decoded elsewhere (in one pass with other sessions' windows):
    `padded(ranges)`, which frames to decode, then `complete(ranges, decoded)`, stitched."""

    def __init__(
        self, decode: DecodeFn, frames: int, context_frames: int, samples_per_frame: int = SAMPLES_PER_FRAME
    ) -> None:
        self._decode = decode
        self.frames = frames
        self.context_frames = context_frames
        self._hop = samples_per_frame
        self.position = 0  # the frame the next window starts at
        self.windows: list[tuple[int, int]] = []  # every window decoded so far, in order
        self._tail: np.ndarray | None = None
        crossfade = min(CROSSFADE_SAMPLES, context_frames * samples_per_frame)
        self._fade_in = np.linspace(0.0, 1.0, crossfade + 2, dtype=np.float32)[1:-1]

    def padded(self, ranges: list[tuple[int, int]], history: int | None = None) -> list[tuple[int, int]]:
        """The frames each window of `ranges` is decoded from: its own, its context, and before it
        `history` frames (within the segment) where that is more than the context (`WindowPlan.history`)."""
        context = self.context_frames
        before = context if history is None else max(context, history)
        return [(max(0, start - before), min(self.frames, stop + context)) for start, stop in ranges]

    def decode(self, ranges: list[tuple[int, int]], history: int | None = None) -> np.ndarray:
        """Decode consecutive windows (decoded side by side where the engine has lanes) and return the
        audio they complete, each crossfaded with the one before it."""
        return self.complete(ranges, self._decode(self.padded(ranges, history)), history)

    def complete(
        self, ranges: list[tuple[int, int]], decoded: list[np.ndarray], history: int | None = None
    ) -> np.ndarray:
        """The audio consecutive windows complete, given each one's audio decoded from its `padded`
        frames, each crossfaded with the one before it."""
        padded = self.padded(ranges, history)
        self.position = ranges[-1][1]
        self.windows += ranges
        pieces = [
            self._stitch(audio, start - lo, stop - lo)
            for (start, stop), (lo, _), audio in zip(ranges, padded, decoded, strict=True)
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
