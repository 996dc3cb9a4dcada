"""The audio facts the wire needs, from the product-wide ones (`facts.py`: 24 kHz mono s16le): the
model's float samples as PCM bytes, how many bytes one wire frame holds, and how long PCM lasts."""

from __future__ import annotations

import numpy as np

from facts import PCM_BYTES_PER_S, SAMPLE_BYTES, SAMPLE_RATE


def float_to_pcm16(audio: np.ndarray) -> bytes:
    """Model output (float32 in [-1, 1]) as s16le bytes."""
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def frame_bytes(frame_ms: int) -> int:
    """Bytes of PCM in one wire frame of `frame_ms` (20-100 ms: whole samples at 24 kHz)."""
    return PCM_BYTES_PER_S * frame_ms // 1000


def pcm_seconds(pcm_bytes: int) -> float:
    """How long `pcm_bytes` of PCM play."""
    return pcm_bytes / SAMPLE_BYTES / SAMPLE_RATE


def pcm_samples(pcm_bytes: int) -> int:
    return pcm_bytes // SAMPLE_BYTES
