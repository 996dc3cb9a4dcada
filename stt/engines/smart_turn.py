"""Pipecat's Smart Turn v3.2 on onnxruntime: whether an utterance sounds finished, from its audio alone
(intonation, rhythm and the words as sounds: "my number is five five five ..." and "I want to, um"
sound unfinished; "What is the capital of France?" finished). 23 languages, BSD-2.

The model is a Whisper-tiny encoder with a classifier head: it reads the last 8 s of the utterance as
Whisper's log-mel features (80 bins, 100 frames a second), the audio zero-padded at the front and
normalized to zero mean and unit variance first, and returns the probability that the turn is complete.
faster-whisper's `FeatureExtractor` (already here for Whisper) computes those features: over the same
8 s window it matches Pipecat's vendored copy of transformers' extractor to 2e-7. One call is about
45 ms on one core of this machine (AMD EPYC, AVX512-VNNI), so it runs in a worker thread.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from facts import STT_SAMPLE_RATE

WINDOW_S = 8
WINDOW_SAMPLES = WINDOW_S * STT_SAMPLE_RATE
_NORM_EPS = 1e-7


class SmartTurn:
    def __init__(self, path: Path) -> None:
        from faster_whisper.feature_extractor import FeatureExtractor

        options = ort.SessionOptions()
        # one thread: a call is ~45 ms, and it runs beside Whisper's decode, which has the other cores
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._features = FeatureExtractor(chunk_length=WINDOW_S)

    def features(self, samples: np.ndarray) -> np.ndarray:
        """The model's input for `samples` (16 kHz float32): its last 8 s, zero-padded at the front."""
        window = np.asarray(samples, dtype=np.float32)[-WINDOW_SAMPLES:]
        window = np.pad(window, (WINDOW_SAMPLES - len(window), 0))
        window = (window - window.mean()) / np.sqrt(window.var() + _NORM_EPS)
        return self._features(window, padding=0).astype(np.float32)

    def complete(self, samples: np.ndarray) -> float:
        """The probability that the utterance in `samples` is a finished turn."""
        (probability,) = self._session.run(None, {"input_features": self.features(samples)[np.newaxis]})
        return float(np.asarray(probability).reshape(-1)[0])
