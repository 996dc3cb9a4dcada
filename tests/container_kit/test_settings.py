"""A container's config from its environment (container_kit/settings.py): each field from the variable
named after it, typed as the field, an empty variable leaving the default, a bad value named by its
variable; the values a `setting` may take; the model directory's precedence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from container_kit import settings
from container_kit.settings import ContainerSettings, setting


@dataclass(frozen=True)
class KitConfig(ContainerSettings):
    ENV_PREFIX = "KIT"
    name: str = "x"
    rate: float = setting(0.5, within=(0.1, 0.9))
    frames: int = setting(10, within=(1, 100), unit="ms")
    mode: str = setting("auto", one_of=("auto", "on", "off"))
    folder: Path = Path("/srv")

    @classmethod
    def holds_a_model(cls, path: Path) -> bool:
        return (path / "weights.bin").is_file()


@pytest.fixture(autouse=True)
def no_model_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("KIT_MODEL_DIR", "SM_MODEL_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(settings, "SAGEMAKER_MODEL_DIR", tmp_path / "opt-ml-model")
    return tmp_path / "opt-ml-model"


def test_each_field_comes_from_its_variable_typed(monkeypatch: pytest.MonkeyPatch):
    for name, value in {
        "KIT_NAME": "y",
        "KIT_RATE": "0.25",
        "KIT_FRAMES": "20",
        "KIT_FOLDER": "/data",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KIT_MODE", "")  # empty: the default
    monkeypatch.setenv("KIT_PORT", "9000")
    config = KitConfig.from_env()
    assert (config.name, config.rate, config.frames, config.mode) == ("y", 0.25, 20, "auto")
    assert (config.folder, config.host, config.port, config.model_dir) == (
        Path("/data"),
        "127.0.0.1",
        9000,
        None,
    )
    assert KitConfig.from_env(port=1234, host="0.0.0.0").port == 1234


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("KIT_FRAMES", "ten", "KIT_FRAMES must be an integer, got 'ten'"),
        ("KIT_RATE", "half", "KIT_RATE must be a number, got 'half'"),
        ("KIT_FRAMES", "0", "KIT_FRAMES must be within 1-100 ms, got 0"),
        ("KIT_RATE", "0.95", "KIT_RATE must be within 0.1-0.9, got 0.95"),
        ("KIT_MODE", "sometimes", "KIT_MODE must be auto, on or off, got 'sometimes'"),
    ],
)
def test_a_bad_value_is_named_by_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as refused:
        KitConfig.from_env()
    assert str(refused.value) == message


def test_the_model_directory_is_named_or_sagemakers_when_it_holds_the_model(
    monkeypatch: pytest.MonkeyPatch, no_model_dir: Path
):
    assert KitConfig.from_env().model_dir is None
    no_model_dir.mkdir()
    assert KitConfig.from_env().model_dir is None, "an empty /opt/ml/model is not a model"
    (no_model_dir / "weights.bin").write_bytes(b"w")
    assert KitConfig.from_env().model_dir == no_model_dir
    monkeypatch.setenv("SM_MODEL_DIR", "/sm")
    assert KitConfig.from_env().model_dir == Path("/sm")
    monkeypatch.setenv("KIT_MODEL_DIR", "/mine")
    assert KitConfig.from_env().model_dir == Path("/mine")


def test_a_field_of_a_type_the_environment_cannot_say_is_refused(monkeypatch: pytest.MonkeyPatch):
    @dataclass(frozen=True)
    class Odd(KitConfig):
        sizes: tuple[int, ...] = ()

    assert Odd.from_env().sizes == (), "unset: its default"
    monkeypatch.setenv("KIT_SIZES", "1,2")
    with pytest.raises(TypeError, match=r"Odd\.sizes"):
        Odd.from_env()
