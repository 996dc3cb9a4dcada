"""Objective comparisons of two renderings of the same speech (numpy only): how far streamed audio is
from whole-segment audio, and whether its seams click. Used by the tests and by
`python -m benchmarks.container`.

- `mel_distance`: mean absolute difference of log10 mel spectrograms (80 bands, 1024-point FFT, 10 ms
  hop), each floored 50 dB below its own peak so that inaudible differences in near-silence do not
  count. 0 for identical audio; Kokoro's int8 decoder itself moves by about 0.1 when only its input
  length changes (the instance norms and the dynamic quantization see other statistics).
- `seam_click_ratio`: the high-frequency energy (first difference) in the 10 ms around each seam, the
  loudest seam over the median 10 ms of the same audio. A click is a jump, so it shows up here.
"""

from __future__ import annotations

import functools

import numpy as np

from tts.config import SAMPLE_RATE

_FFT = 1024
_HOP = 240
_MELS = 80
_FLOOR_DECADES = 5.0


@functools.cache
def _mel_filters() -> np.ndarray:
    def to_hz(mel: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)

    top = 2595.0 * np.log10(1.0 + (SAMPLE_RATE / 2) / 700.0)
    edges = to_hz(np.linspace(0.0, top, _MELS + 2))
    bins = np.fft.rfftfreq(_FFT, 1.0 / SAMPLE_RATE)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.clip(
        np.minimum((bins - lower) / (centre - lower), (upper - bins) / (upper - centre)), 0.0, None
    )


def log_mel(audio: np.ndarray) -> np.ndarray:
    """[80, frames] log10 mel power, floored 50 dB below its peak."""
    padded = np.pad(np.asarray(audio, dtype=np.float64), (_FFT // 2, _FFT // 2))
    frames = np.lib.stride_tricks.sliding_window_view(padded, _FFT)[::_HOP] * np.hanning(_FFT)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    mel = np.log10(_mel_filters() @ power.T + 1e-10)
    return np.maximum(mel, mel.max() - _FLOOR_DECADES)


def mel_distance(reference: np.ndarray, other: np.ndarray) -> float:
    a, b = log_mel(reference), log_mel(other)
    frames = min(a.shape[1], b.shape[1])
    return float(np.abs(a[:, :frames] - b[:, :frames]).mean())


def seam_click_ratio(audio: np.ndarray, seams: list[int]) -> float:
    """Loudest high-frequency 10 ms around a seam (sample positions) over the median 10 ms."""
    if not seams:
        return 0.0
    window = SAMPLE_RATE // 100
    jumps = np.diff(np.asarray(audio, dtype=np.float64)) ** 2
    blocks = jumps[: len(jumps) // window * window].reshape(-1, window).mean(axis=1)
    around = [
        blocks[max(0, s - window // 2) // window : (s + window // 2) // window + 1].max() for s in seams
    ]
    return float(max(around) / np.median(blocks))
