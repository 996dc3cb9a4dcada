"""Comparing two renderings of the same speech where waveforms cannot be compared sample by sample
(the generator's harmonic source starts at a random phase and adds noise): a log-mel distance."""

from __future__ import annotations

import numpy as np
import torch

SAMPLE_RATE = 24_000
FRAME = 600  # output samples per predicted duration frame (hop 5 x upsampling 10 x 6 x 2)


def log_mel(audio: np.ndarray, n_fft: int = 1024, hop: int = 256, n_mels: int = 80) -> np.ndarray:
    """Log-mel spectrogram [frames, n_mels] (natural log, floor 1e-5), as vocoder papers compare them."""
    spec = torch.stft(
        torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32)),
        n_fft,
        hop,
        window=torch.hann_window(n_fft),
        return_complex=True,
    ).abs()
    freqs = np.linspace(0, SAMPLE_RATE / 2, n_fft // 2 + 1)
    top = 2595 * np.log10(1 + (SAMPLE_RATE / 2) / 700)
    edges = 700 * (10 ** (np.linspace(0, top, n_mels + 2) / 2595) - 1)
    rising = (freqs[None] - edges[:-2, None]) / (edges[1:-1, None] - edges[:-2, None])
    falling = (edges[2:, None] - freqs[None]) / (edges[2:, None] - edges[1:-1, None])
    bank = np.maximum(0, np.minimum(rising, falling))
    return np.log(np.maximum(bank @ spec.numpy(), 1e-5)).T


def log_mel_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of the two log-mel spectrograms over their common length (nats)."""
    x, y = log_mel(a), log_mel(b)
    n = min(len(x), len(y))
    return float(np.abs(x[:n] - y[:n]).mean())
