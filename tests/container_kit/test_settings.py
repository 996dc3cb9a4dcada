"""A container's config from its environment (container_kit/settings.py): each field from the variable
named after it, typed as the field, an empty variable leaving the default, a bad value named by its
variable; the values a `setting` may take; the model directory's precedence. And the two containers'
configs: the variables their READMEs name, read into their fields, and the words a bad one is refused in
(the same as before the kit read them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from container_kit import settings
from container_kit.settings import ContainerSettings, setting
from stt.config import STTConfig
from tts.config import TTSConfig


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
    ("assignment", "message"),
    [
        ("KIT_FRAMES=ten", "KIT_FRAMES must be an integer, got 'ten'"),
        ("KIT_RATE=half", "KIT_RATE must be a number, got 'half'"),
        ("KIT_FRAMES=0", "KIT_FRAMES must be within 1-100 ms, got 0"),
        ("KIT_RATE=0.95", "KIT_RATE must be within 0.1-0.9, got 0.95"),
        ("KIT_MODE=sometimes", "KIT_MODE must be auto, on or off, got 'sometimes'"),
    ],
)
def test_a_bad_value_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch, assignment: str, message: str):
    variable, _, value = assignment.partition("=")
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


@pytest.mark.parametrize(
    ("config", "variables", "fields"),
    [
        (
            TTSConfig,
            {"TTS_VOICE": "af_heart", "TTS_FRAME_MS": "40", "TTS_ENGINE": "torch", "TTS_WINDOW_GROWTH": "2"},
            {"voice": "af_heart", "frame_ms": 40, "engine": "torch", "window_growth": 2},
        ),
        (
            STTConfig,
            {
                "STT_DEVICE": "cpu",
                "STT_VAD_THRESHOLD": "0.3",
                "STT_END_OF_TURN_MS": "800",
                "STT_MAX_CLIP_S": "60",
            },
            {"device": "cpu", "vad_threshold": 0.3, "end_of_turn_ms": 800, "max_clip_s": 60},
        ),
    ],
    ids=["tts", "stt"],
)
def test_the_containers_read_their_variables(
    monkeypatch: pytest.MonkeyPatch, config: type[ContainerSettings], variables: dict[str, str], fields: dict
):
    prefix = config.ENV_PREFIX
    shared = {"CACHE_DIR": "/cache", "THREADS": "3", "HOST": "0.0.0.0", "PORT": "9090", "MODEL_DIR": "/m"}
    for name, value in {**variables, **{f"{prefix}_{k}": v for k, v in shared.items()}}.items():
        monkeypatch.setenv(name, value)
    read = config.from_env(port=8081)
    assert {name: getattr(read, name) for name in fields} == fields
    assert (read.cache_dir, read.threads, read.host, read.port) == (Path("/cache"), 3, "0.0.0.0", 8081)
    assert read.model_dir == Path("/m")


@pytest.mark.parametrize(
    ("config", "fields", "message"),
    [
        (TTSConfig, {"frame_ms": 10}, "TTS_FRAME_MS must be within 20-100 ms, got 10"),
        (TTSConfig, {"provider": "tpu"}, "TTS_PROVIDER must be auto, cpu or cuda, got 'tpu'"),
        (TTSConfig, {"engine": "tensorrt"}, "TTS_ENGINE must be onnx, torch or auto, got 'tensorrt'"),
        (TTSConfig, {"capacity": 65}, "TTS_CAPACITY must be within 0 (measured at load) and 64, got 65"),
        (TTSConfig, {"workers": 0}, "TTS_WORKERS must be at least 1"),
        (STTConfig, {"vad_threshold": 0.99}, "STT_VAD_THRESHOLD must be within 0.05-0.95, got 0.99"),
        (STTConfig, {"partial_interval_ms": 50}, "STT_PARTIAL_INTERVAL_MS must be within 100-10000, got 50"),
        (STTConfig, {"device": "tpu"}, "STT_DEVICE must be auto, cpu or cuda, got 'tpu'"),
    ],
)
def test_the_containers_refuse_a_bad_setting_by_its_variable(
    config: type[ContainerSettings], fields: dict[str, object], message: str
):
    with pytest.raises(ValueError) as refused:
        config(**fields)
    assert str(refused.value) == message
