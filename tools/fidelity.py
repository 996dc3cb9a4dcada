"""Objective comparisons of two renderings of the same speech (numpy only): how far streamed audio is
from whole-segment audio, and whether its seams click. Used by the tests and by
`python -m benchmarks streaming`.

- `mel_distance`: mean absolute difference of log10 mel spectrograms (80 bands, 1024-point FFT, 10 ms
  hop), each floored 50 dB below its own peak so that inaudible differences in near-silence do not
  count. 0 for identical audio; Kokoro's int8 decoder itself moves by about 0.1 when only its input
  length changes (the instance norms and the dynamic quantization see other statistics).
- `seam_click_ratio`: the largest sample-to-sample jump within 5 ms of each seam over the largest jump
  in the 100 ms on either side: a click is a jump bigger than anything around it (above 1), while a
  fricative that happens to sit at a seam is not, since its neighbours jump as much; the worst seam.
- `seam_mel_distance`: `mel_distance` over the 90 ms around each seam: where too little context shows.
"""

from __future__ import annotations

import functools

import numpy as np

from facts import SAMPLE_RATE

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
    """The largest sample-to-sample jump within 5 ms of a seam (sample positions) over the largest jump
    in the 100 ms on either side of that; the worst seam."""
    jumps = np.abs(np.diff(np.asarray(audio, dtype=np.float64)))
    near, far = SAMPLE_RATE // 200, SAMPLE_RATE // 10
    ratios = []
    for seam in seams:
        at = jumps[max(0, seam - near) : seam + near]
        around = np.concatenate(
            [jumps[max(0, seam - far) : max(0, seam - near)], jumps[seam + near : seam + far]]
        )
        if len(at) and len(around):
            ratios.append(at.max() / max(float(around.max()), 1e-6))
    return float(max(ratios, default=0.0))


def seam_mel_distance(reference: np.ndarray, other: np.ndarray, seams: list[int]) -> float:
    """`mel_distance` over the 90 ms around each seam only: where missing context would show."""
    a, b = log_mel(reference), log_mel(other)
    frames = min(a.shape[1], b.shape[1])
    columns = sorted(
        {c for seam in seams for c in range(seam // _HOP - 4, seam // _HOP + 5) if 0 <= c < frames}
    )
    if not columns:
        return 0.0
    return float(np.abs(a[:, columns] - b[:, columns]).mean())
