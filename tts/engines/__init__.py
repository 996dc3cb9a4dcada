"""The engines that run Kokoro-82M, and the choice between them (`TTS_ENGINE=onnx|torch|auto`).

- `base.py`: the interface the container sees (`SpeechEngine`), the one feature type (`Features`), and
  what does not depend on the engine: G2P and the 510-token split (`tts/text/g2p.py`), the style-row
  rule, the device rule; `decode.py` is the decode maths both engines share (the harmonic source's
  phase, a window's context and crossfade: the frame ranges it is given, stitched), `fidelity.py`
  measures how close that comes to whole-segment audio; `weights.py` holds the shipped weights both
  engines start from. Which frames a step gets is the scheduler's (`tts/scheduling/`).
- `onnx/`: the int8 ONNX export on onnxruntime (`OnnxEngine`), the local default.
- `torch/`: hexgrad's `kokoro.KModel` on torch (`TorchEngine`), on CUDA when present; its weights in
  hexgrad's layout, given or exported once from the int8 export (`torch/export.py`).

This module is the only one that imports both rooms, each inside the function that chooses it, so torch
is imported only when the torch engine is chosen. `auto` means torch on a machine with CUDA (and torch
installed), onnx otherwise.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TextIO

from tts.config import TTSConfig
from tts.engines.base import SpeechEngine

MODEL_FORMATS = ("onnx", "torch")


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
    """The configured engine, loaded. The torch engine is given hexgrad's layout: `TTS_MODEL_DIR`, or
    the export in the cache (written once, about a minute on 2 cores)."""
    if engine_name(config) == "torch":
        from tts.engines.torch.engine import TorchEngine
        from tts.engines.torch.export import hexgrad_layout

        return TorchEngine(config, hexgrad_layout(config))
    from tts.engines.onnx.engine import OnnxEngine

    return OnnxEngine(config)


def export_model(dest: Path, fmt: str, cache_dir: Path, progress: TextIO | None = None) -> Path:
    """Write a model directory in `fmt` (one of MODEL_FORMATS) from the shipped weights:
    `python -m tts export-model DIR --format torch|onnx`."""
    if fmt == "torch":
        from tts.engines.torch.export import export_torch

        return export_torch(dest, cache_dir, progress)
    if fmt == "onnx":
        from tts.engines.onnx.assets import export_model_dir

        return export_model_dir(dest, cache_dir)
    raise ValueError(f"unknown model format {fmt!r}; known: {', '.join(MODEL_FORMATS)}")
