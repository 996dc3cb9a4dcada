"""Silero VAD on onnxruntime (no torch): the speech probability of each 32 ms chunk of 16 kHz audio.

The graph is recurrent: each call takes the chunk with the previous chunk's last 64 samples in front
(its context) and a (2, 1, 128) state, and returns the probability and the next state, so each stream
keeps its own `VadStream`; the session object is shared (onnxruntime runs one session from many threads).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from facts import STT_SAMPLE_RATE
from stt.config import VAD_CHUNK_SAMPLES

CONTEXT_SAMPLES = 64


class SileroVad:
    def __init__(self, path: Path) -> None:
        options = ort.SessionOptions()
        # one 32 ms chunk is about 0.1 ms of work: more threads only add hand-off cost
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._rate = np.array(STT_SAMPLE_RATE, dtype=np.int64)

    def stream(self) -> VadStream:
        return VadStream(self)

    def _run(self, chunk: np.ndarray, state: np.ndarray) -> tuple[float, np.ndarray]:
        probability, next_state = self._session.run(
            None, {"input": chunk[np.newaxis, :], "state": state, "sr": self._rate}
        )
        return float(probability[0, 0]), next_state


class VadStream:
    """One stream's VAD: feed it whole chunks of VAD_CHUNK_SAMPLES, in order."""

    def __init__(self, vad: SileroVad) -> None:
        self._vad = vad
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)

    def probability(self, chunk: np.ndarray) -> float:
        if chunk.shape != (VAD_CHUNK_SAMPLES,):
            raise ValueError(f"a VAD chunk is {VAD_CHUNK_SAMPLES} samples, got {chunk.shape}")
        framed = np.concatenate([self._context, chunk.astype(np.float32, copy=False)])
        probability, self._state = self._vad._run(framed, self._state)
        self._context = framed[-CONTEXT_SAMPLES:]
        return probability
