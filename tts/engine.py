"""Kokoro-82M inference through onnxruntime: text -> phoneme-token segments -> float32 audio.

Graph: `tokens` int64 [1, n+2] (wrapped in pad 0), `style` float32 [1, 256], `speed` float32 [1];
output `audio` float32 at 24 kHz. The style row is picked by token count the way the model's authors do
(hexgrad's KPipeline: `pack[len(phonemes) - 1]`); kokoro-onnx picks one row later. One row off changes
the waveform, so every engine here uses this rule.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
import onnxruntime as ort

from tts.assets import load_assets
from tts.config import MAX_PHONEME_TOKENS, TTSConfig
from tts.g2p import Phonemizer, split_tokens

log = logging.getLogger("tts.engine")

WARMUP_TEXT = "Warming up the voice."


class SynthesisCancelled(Exception):
    """A run was terminated on purpose (barge-in)."""


def _providers(choice: str) -> list[str]:
    available = ort.get_available_providers()
    if choice == "cuda" and "CUDAExecutionProvider" not in available:
        raise RuntimeError(
            "TTS_PROVIDER=cuda but onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)"
        )
    if choice in {"cuda", "auto"} and "CUDAExecutionProvider" in available:
        # onnxruntime-gpu[cuda,cudnn] ships CUDA and cuDNN as pip wheels; load them before the session.
        if hasattr(ort, "preload_dlls"):
            ort.preload_dlls()
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


class KokoroEngine:
    def __init__(self, config: TTSConfig) -> None:
        started = time.perf_counter()
        assets = load_assets(config.model_dir, config.cache_dir)
        options = ort.SessionOptions()
        options.intra_op_num_threads = config.threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        # Spinning threads steal the CPU from the event loop and the other processes of a local stack.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(assets.model_path), sess_options=options, providers=_providers(config.provider)
        )
        self.model_path = assets.model_path
        self.voices = assets.voices
        self._vocab = assets.vocab
        self.phonemizer = Phonemizer()
        self.load_seconds = time.perf_counter() - started
        log.info(
            "loaded %s in %.2fs (%s, %d voices)",
            assets.model_path.name,
            self.load_seconds,
            self._session.get_providers()[0],
            len(self.voices),
        )

    @property
    def provider(self) -> str:
        return self._session.get_providers()[0]

    def segments(self, text: str, lang: str) -> list[list[int]]:
        """Phonemize and split into token lists of at most 510 tokens, cut at clause boundaries."""
        phonemes = "".join(ch for ch in self.phonemizer.phonemize(text, lang) if ch in self._vocab)
        return [[self._vocab[ch] for ch in piece] for piece in split_tokens(phonemes, MAX_PHONEME_TOKENS)]

    def synthesize(
        self, tokens: list[int], voice: str, speed: float, run_options: ort.RunOptions | None = None
    ) -> np.ndarray:
        """One forward pass. `run_options.terminate = True` from another thread cancels it."""
        pack = self.voices[voice]
        style = pack[min(len(tokens), len(pack)) - 1].reshape(1, 256)
        feeds = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style.astype(np.float32, copy=False),
            "speed": np.array([speed], dtype=np.float32),
        }
        try:
            (audio,) = self._session.run(None, feeds, run_options)
        except Exception as exc:  # onnxruntime raises a generic Fail when terminated
            if run_options is not None and run_options.terminate:
                raise SynthesisCancelled() from exc
            raise
        return np.asarray(audio, dtype=np.float32).reshape(-1)

    def speak(self, text: str, voice: str, speed: float = 1.0, lang: str = "en-us") -> np.ndarray:
        """Whole text to audio, segment after segment (for tools and benchmarks, not the server path)."""
        parts = [self.synthesize(tokens, voice, speed) for tokens in self.segments(text, lang)]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def warm_up(self, voice: str) -> float:
        """Run one short synthesis so the first real request does not pay for lazy initialisation."""
        started = time.perf_counter()
        self.speak(WARMUP_TEXT, voice)
        return time.perf_counter() - started
