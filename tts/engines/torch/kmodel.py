"""hexgrad's model-directory layout on torch: `config.json`, `kokoro-v1_0.pth`, `voices/<name>.pt`.

`load_kmodel` builds `kokoro.KModel` and loads every component STRICTLY. (KModel's own constructor
retries a failed load with `strict=False` and only logs it at debug level, which would leave layers at
their random initialisation without a word; here any missing, unexpected or mis-shaped key raises.)
hexgrad's original checkpoint prefixes its keys with `module.` (it was saved from DataParallel); the
prefix is removed before the strict load, which is what KModel's fallback does too.

KModel is imported without `kokoro/__init__.py` (`kmodel_class`): that file imports KPipeline and through
it misaki's G2P (spaCy, 129 MB installed and 1.5 s of import on 2 cores; espeak-ng), which the engine
never calls (its G2P is `tts/text/g2p.py`) and the GPU check's machine does not have.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

MODEL_FILE = "kokoro-v1_0.pth"
CONFIG_FILE = "config.json"
VOICES_DIR = "voices"
COMPONENTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
REPO_ID = "hexgrad/Kokoro-82M"


class KModelLoadError(RuntimeError):
    """The directory is not a loadable hexgrad layout (missing file, or a state dict that does not fit)."""


def is_kmodel_dir(directory: Path | None) -> bool:
    return (
        directory is not None
        and all((directory / name).is_file() for name in (CONFIG_FILE, MODEL_FILE))
        and (directory / VOICES_DIR).is_dir()
    )


def kmodel_class() -> Any:
    """hexgrad's `kokoro.model.KModel`, its package registered without running its `__init__` (the
    module docstring says why) and given the `KModel` name its `__init__` gives it, unless a tool
    imported `kokoro` whole before; kokoro's own logging stays off, as its `__init__` leaves it."""
    if "kokoro" not in sys.modules:
        spec = importlib.util.find_spec("kokoro")
        if spec is None:
            raise KModelLoadError("kokoro is not installed (pip install kokoro==0.9.4)")
        package = importlib.util.module_from_spec(spec)
        sys.modules["kokoro"] = package
        package.KModel = importlib.import_module("kokoro.model").KModel
    from loguru import logger

    logger.disable("kokoro")
    return sys.modules["kokoro"].KModel


def build_kmodel(config: dict[str, Any]) -> Any:
    """KModel with its random initial weights (never touches the network: config and model are given)."""
    KModel = kmodel_class()
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        return KModel(repo_id=REPO_ID, config=config, model=str(empty))


def load_state_strictly(model: Any, state: dict[str, dict[str, torch.Tensor]]) -> None:
    if set(state) != set(COMPONENTS):
        raise KModelLoadError(f"state dict has components {sorted(state)}, expected {list(COMPONENTS)}")
    for component in COMPONENTS:
        weights = state[component]
        if weights and all(key.startswith("module.") for key in weights):
            weights = {key.removeprefix("module."): value for key, value in weights.items()}
        try:
            getattr(model, component).load_state_dict(weights, strict=True)
        except RuntimeError as exc:
            raise KModelLoadError(f"{component}: {exc}") from exc


def load_kmodel(directory: Path, device: str = "cpu") -> Any:
    """KModel from `directory`, every component loaded strictly, in eval mode on `device`."""
    if not is_kmodel_dir(directory):
        raise KModelLoadError(f"{directory} lacks {CONFIG_FILE}, {MODEL_FILE} or {VOICES_DIR}/")
    config = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    model = build_kmodel(config)
    state = torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True)
    load_state_strictly(model, state)
    return model.eval().to(device)


def load_voices(directory: Path) -> dict[str, np.ndarray]:
    """`voices/<name>.pt` -> {name: float32 [510, 256]}."""
    voices = {}
    for path in sorted((directory / VOICES_DIR).glob("*.pt")):
        pack = torch.load(path, map_location="cpu", weights_only=True)
        if pack.shape[-1] != 256 or pack.numel() % 256:
            raise KModelLoadError(f"voice {path.name} has shape {tuple(pack.shape)}, expected (510, 1, 256)")
        voices[path.stem] = pack.float().reshape(-1, 256).numpy()
    if not voices:
        raise KModelLoadError(f"{directory / VOICES_DIR} holds no *.pt voices")
    return voices
