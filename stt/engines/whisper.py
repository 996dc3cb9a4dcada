"""Whisper on faster-whisper (CTranslate2): samples in, text and timed words out.

One `Transcriber` per container; CTranslate2 runs one transcription at a time per worker, so calls are
made from worker threads and queue there. Partials skip word alignment (the cross-attention DTW costs
about a third of a decode), finals have it.
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


class Transcriber:
    def __init__(self, config: STTConfig) -> None:
        import ctranslate2
        from faster_whisper import WhisperModel

        started = time.perf_counter()
        self.model_dir: Path = config.model_dir or whisper_base(config.cache_dir)
        self.device = choose_device(config.device, ctranslate2.get_cuda_device_count())
        compute_type = config.compute_type if self.device == "cpu" else "float16"
        self._model = WhisperModel(
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
