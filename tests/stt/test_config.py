"""STTConfig from the environment: the variables stt/README.md names, read into their fields, and the
words a bad one is refused in."""

from __future__ import annotations

from pathlib import Path

import pytest

from stt.config import STTConfig


def test_the_variables_set_their_fields(monkeypatch: pytest.MonkeyPatch):
    variables = {
        "STT_DEVICE": "cpu",
        "STT_COMPUTE_TYPE": "float32",
        "STT_VAD_THRESHOLD": "0.3",
        "STT_END_OF_TURN_MS": "800",
        "STT_MAX_CLIP_S": "60",
        "STT_CACHE_DIR": "/cache",
        "STT_PORT": "9091",
        "STT_MODEL_DIR": "/models/whisper",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    config = STTConfig.from_env()
    assert (config.device, config.compute_type, config.vad_threshold) == ("cpu", "float32", 0.3)
    assert (config.end_of_turn_ms, config.max_clip_s, config.cache_dir) == (800, 60, Path("/cache"))
    assert (config.port, config.model_dir) == (9091, Path("/models/whisper"))
    assert config.max_body_bytes == 60 * 32_000 + 64 * 1024


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"device": "tpu"}, "STT_DEVICE must be auto, cpu or cuda, got 'tpu'"),
        ({"vad_threshold": 0.99}, "STT_VAD_THRESHOLD must be within 0.05-0.95, got 0.99"),
        ({"partial_interval_ms": 50}, "STT_PARTIAL_INTERVAL_MS must be within 100-10000, got 50"),
        ({"max_clip_s": 0}, "STT_MAX_CLIP_S must be within 1-3600, got 0"),
    ],
)
def test_a_bad_setting_is_refused_by_its_variable(fields: dict[str, object], message: str):
    with pytest.raises(ValueError) as refused:
        STTConfig(**fields)
    assert str(refused.value) == message


def test_a_variable_that_is_not_a_number_is_named(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("STT_VAD_THRESHOLD", "high")
    with pytest.raises(ValueError, match=r"^STT_VAD_THRESHOLD must be a number, got 'high'$"):
        STTConfig.from_env()
