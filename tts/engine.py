"""Kokoro-82M inference through onnxruntime (the int8 export): one segment of phoneme tokens -> float32
audio. Phonemization, segment splitting and the style-row rule are shared with the torch engine
(tts/synthesis.py).

Graph: `tokens` int64 [1, n+2] (wrapped in pad 0), `style` float32 [1, 256], `speed` float32 [1];
output `audio` float32 at 24 kHz.
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
import onnxruntime as ort

from tts.assets import load_assets
from tts.config import TTSConfig
from tts.synthesis import RunFlag, SpeechEngine, SynthesisCancelled, style_row

log = logging.getLogger("tts.engine")


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


class KokoroEngine(SpeechEngine):
    name = "onnx"

    def __init__(self, config: TTSConfig) -> None:
        started = time.perf_counter()
        assets = load_assets(config.model_dir, config.cache_dir)
        super().__init__(assets.vocab)
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

    @property
    def device(self) -> str:
        return self.provider

    def run_flag(self) -> ort.RunOptions:
        return ort.RunOptions()

    def synthesize(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> np.ndarray:
        """One forward pass. `run_flag.terminate = True` from another thread cancels it."""
        feeds = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style_row(self.voices[voice], len(tokens)),
            "speed": np.array([speed], dtype=np.float32),
        }
        try:
            (audio,) = self._session.run(None, feeds, run_flag)
        except Exception as exc:  # onnxruntime raises a generic Fail when terminated
            if run_flag is not None and run_flag.terminate:
                raise SynthesisCancelled() from exc
            raise
        return np.asarray(audio, dtype=np.float32).reshape(-1)
