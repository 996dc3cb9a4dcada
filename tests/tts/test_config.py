"""TTSConfig from the environment: the variables tts/README.md names, read into their fields, and the
words a bad one is refused in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tts.config import TTSConfig


def test_the_variables_set_their_fields(monkeypatch: pytest.MonkeyPatch):
    variables = {
        "TTS_VOICE": "af_heart",
        "TTS_CACHE_DIR": "/cache",
        "TTS_THREADS": "3",
        "TTS_FRAME_MS": "40",
        "TTS_ENGINE": "torch",
        "TTS_WINDOW_GROWTH": "2",
        "TTS_HOST": "0.0.0.0",
        "TTS_PORT": "9090",
        "TTS_MODEL_DIR": "/models/kokoro",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    config = TTSConfig.from_env(port=8081)
    assert (config.voice, config.cache_dir, config.threads, config.frame_ms) == (
        "af_heart",
        Path("/cache"),
        3,
        40,
    )
    assert (config.engine, config.window_growth, config.host, config.port) == ("torch", 2, "0.0.0.0", 8081)
    assert config.model_dir == Path("/models/kokoro")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"frame_ms": 10}, "TTS_FRAME_MS must be within 20-100 ms, got 10"),
        ({"provider": "tpu"}, "TTS_PROVIDER must be auto, cpu or cuda, got 'tpu'"),
        ({"engine": "tensorrt"}, "TTS_ENGINE must be onnx, torch or auto, got 'tensorrt'"),
        ({"window_growth": 17}, "TTS_WINDOW_GROWTH must be within 1-16, got 17"),
        ({"capacity": 65}, "TTS_CAPACITY must be within 0 (measured at load) and 64, got 65"),
        ({"workers": 0}, "TTS_WORKERS must be at least 1"),
    ],
)
def test_a_bad_setting_is_refused_by_its_variable(fields: dict[str, object], message: str):
    with pytest.raises(ValueError) as refused:
        TTSConfig(**fields)
    assert str(refused.value) == message


def test_a_variable_that_is_not_a_number_is_named(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TTS_MAX_BODY_BYTES", "64k")
    with pytest.raises(ValueError, match=r"^TTS_MAX_BODY_BYTES must be an integer, got '64k'$"):
        TTSConfig.from_env()
