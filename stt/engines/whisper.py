"""Whisper on faster-whisper (CTranslate2): samples in, text and timed words out.

One `Transcriber` per container; CTranslate2 runs one transcription at a time per worker, so calls are
made from worker threads and queue there. Partials skip word alignment (the cross-attention DTW costs
about a third of a decode), finals have it.

A spoken turn is a few seconds long, and faster-whisper pads every segment to Whisper's 30 s window
before encoding it. The encoder's cost grows faster than its input (one core, int8: 0.99 s for 30 s,
0.095 s for 10 s), so `_FittedWhisper` encodes a segment over the window it needs, in steps of
`ENCODER_STEP_FRAMES`: a 5 s question decodes in about 0.22 s instead of 1.0 s (the five LibriVox
utterances of `python -m benchmarks listen`, one core). Windows shorter than 10 s made Whisper base
repeat itself ("He was not an ill-disposed young man." heard twice at 5 s), so 10 s is the least.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stt.config import STTConfig
from stt.engines.weights import whisper_base
from stt.wire.protocol import Word


@dataclass(frozen=True)
class Transcript:
    text: str
    words: list[Word]


# 10 s of log-mel frames (100 a second); the encoder halves them, so a window is an even count.
ENCODER_STEP_FRAMES = 1000


def fitted_frames(features: np.ndarray) -> int:
    """The frames to encode: the content (faster-whisper pads with all-zero columns, which no log-mel of
    real audio is) rounded up to whole steps, at most the features' own length."""
    content = np.flatnonzero(np.any(features != 0, axis=tuple(range(features.ndim - 1))))
    used = int(content[-1]) + 1 if content.size else 0
    steps = max(1, -(-used // ENCODER_STEP_FRAMES))
    return min(features.shape[-1], steps * ENCODER_STEP_FRAMES)


def choose_device(requested: str, cuda_devices: int) -> str:
    """`STT_DEVICE` against the CUDA devices CTranslate2 sees: `cpu`; `auto`, cuda when it sees one; `cuda`,
    which must have one. Without a device CTranslate2's own error is "CUDA driver version is insufficient
    for CUDA runtime version", which names neither the setting nor the fix, so this one does."""
    if requested == "cpu" or (requested == "auto" and cuda_devices == 0):
        return "cpu"
    if cuda_devices == 0:
        raise RuntimeError(
            "STT_DEVICE=cuda, but CTranslate2 sees no CUDA device (no GPU, or a container started without "
            "one: docker run --gpus all); STT_DEVICE=cpu or auto runs Whisper on the CPU"
        )
    return "cuda"


def _fitted_whisper_class() -> type:
    from faster_whisper import WhisperModel

    class _FittedWhisper(WhisperModel):
        def encode(self, features: np.ndarray):
            return super().encode(features[..., : fitted_frames(features)])

    return _FittedWhisper


class Transcriber:
    def __init__(self, config: STTConfig) -> None:
        import ctranslate2

        started = time.perf_counter()
        self.model_dir: Path = config.model_dir or whisper_base(config.cache_dir)
        self.device = choose_device(config.device, ctranslate2.get_cuda_device_count())
        compute_type = config.compute_type if self.device == "cpu" else "float16"
        self._model = _fitted_whisper_class()(
            str(self.model_dir),
            device=self.device,
            compute_type=compute_type,
            cpu_threads=config.threads or (os.cpu_count() or 1),
            local_files_only=True,
        )
        self._language = config.language
        self._beam_size = config.beam_size
        self.load_seconds = time.perf_counter() - started

    def transcribe(self, samples: np.ndarray, *, words: bool, offset_ms: int = 0) -> Transcript:
        """`samples`: 16 kHz float32. Word times are ms from the start of `samples`, plus `offset_ms`."""
        segments, _ = self._model.transcribe(
            samples,
            language=self._language,
            beam_size=self._beam_size,
            vad_filter=False,  # the stream's own VAD has cut the utterance already
            condition_on_previous_text=False,
            word_timestamps=words,
            without_timestamps=not words,
        )
        texts, timed = [], []
        for segment in segments:
            texts.append(segment.text.strip())
            for word in segment.words or ():
                timed.append(
                    Word(
                        word.word.strip(),
                        offset_ms + round(word.start * 1000),
                        offset_ms + round(word.end * 1000),
                    )
                )
        return Transcript(" ".join(t for t in texts if t), timed)
