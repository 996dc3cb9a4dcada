"""The choice of engine (`TTS_ENGINE=onnx|torch|auto`).

- `onnx`: the int8 ONNX export on onnxruntime (tts/engine.py), the local default.
- `torch`: hexgrad's `kokoro.KModel` on torch (tts/torch_engine.py), on CUDA when present. torch is
  imported only when this engine is chosen.
- `auto`: torch on a machine with CUDA (and torch installed), onnx otherwise.
"""

from __future__ import annotations

import importlib
import importlib.util

from tts.config import TTSConfig
from tts.synthesis import SpeechEngine


def cuda_available() -> bool:
    """True on a machine where torch is installed and sees a CUDA device (never imports torch otherwise)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def engine_name(config: TTSConfig) -> str:
    """`onnx` or `torch`: the configured engine, with `auto` resolved."""
    if config.engine == "auto":
        return "torch" if cuda_available() else "onnx"
    return config.engine


def create_engine(config: TTSConfig) -> SpeechEngine:
    if engine_name(config) == "torch":
        return importlib.import_module("tts.torch_engine").TorchEngine(config)
    return importlib.import_module("tts.engine").KokoroEngine(config)
