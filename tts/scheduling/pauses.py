"""SSML breaks: the silence between two segments made to measure what was asked.

Kokoro ends a segment with silence of its own (the last punctuation's and the end pad's frames: 385-530
ms after the last sound, af_heart, four short sentences) and starts one with some (the start pad's
frames: 295-390 ms before the first sound). A `<break time="500ms"/>` inserted as 500 ms of zeros would
be heard as 1.2-1.4 s, and one of 250 ms could not be shorter than 700 ms. So the segment before a break
ends TAIL_KEEP_MS after its last sound (`Breaks.end`), the one after it starts HEAD_KEEP_MS before its
first (`Breaks.start`), and the silence inserted between them is the break less those two: the pause a
listener hears, from the last sound to the next, is the break (at least their sum, 50 ms). A sound is a
5 ms block whose peak reaches SILENCE_LEVEL.
"""

from __future__ import annotations

import numpy as np

from facts import SAMPLE_RATE

BLOCK_SAMPLES = SAMPLE_RATE // 200  # 5 ms
SILENCE_LEVEL = 0.02
"""-34 dBFS: Kokoro's silence between words peaks under 0.005; its quietest consonants above 0.03."""
TAIL_KEEP_MS = 30
"""Kept after a segment's last sound: the release of a final consonant, and no click at the cut."""
HEAD_KEEP_MS = 20
"""Kept before a segment's first sound: its onset's rise."""


def _sounding(audio: np.ndarray) -> np.ndarray:
    """Per 5 ms block of `audio`, whether it holds a sound."""
    blocks = len(audio) // BLOCK_SAMPLES
    if blocks == 0:
        return np.zeros(0, dtype=bool)
    peaks = np.abs(audio[: blocks * BLOCK_SAMPLES]).reshape(blocks, BLOCK_SAMPLES).max(axis=1)
    return peaks >= SILENCE_LEVEL


def leading_silence(audio: np.ndarray) -> int:
    """Samples before `audio`'s first sound (all of it when it has none)."""
    sounding = np.flatnonzero(_sounding(audio))
    return int(sounding[0]) * BLOCK_SAMPLES if len(sounding) else len(audio)


def silence(ms: float) -> np.ndarray:
    return np.zeros(max(0, round(ms * SAMPLE_RATE / 1000)), dtype=np.float32)


class Breaks:
    """One job's breaks: what the last segment before one kept of its silence, for the next to make up."""

    def __init__(self) -> None:
        self._tail = 0  # samples of silence the last segment kept after its last sound

    def end(self, audio: np.ndarray) -> np.ndarray:
        """The last step of a segment a break follows: cut TAIL_KEEP_MS after its last sound."""
        sounding = np.flatnonzero(_sounding(audio))
        if not len(sounding):
            self._tail = len(audio)
            return audio
        keep = min(
            len(audio), (int(sounding[-1]) + 1) * BLOCK_SAMPLES + round(TAIL_KEEP_MS * SAMPLE_RATE / 1000)
        )
        self._tail = keep - (int(sounding[-1]) + 1) * BLOCK_SAMPLES
        faded = audio[:keep].copy()
        fade = min(self._tail, BLOCK_SAMPLES)
        if fade:
            faded[keep - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
        return faded

    def start(self, pause_ms: int, audio: np.ndarray) -> tuple[np.ndarray, int]:
        """The silence to put before a segment's first step `audio` (empty after a break at the end), and
        how many of `audio`'s first samples to drop: `pause_ms` less the last segment's kept tail and
        HEAD_KEEP_MS of `audio`'s own leading silence, the rest of which is dropped."""
        head = min(leading_silence(audio), len(audio))
        cut = max(0, head - round(HEAD_KEEP_MS * SAMPLE_RATE / 1000))
        inserted = silence(pause_ms)
        inserted = inserted[: max(0, len(inserted) - self._tail - (head - cut))]
        self._tail = 0
        return inserted, cut
