"""The container's turn-taking settings, read from the environment and checked."""

from __future__ import annotations

import pytest

from stt.config import STTConfig


def test_turn_settings_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("STT_TURN_CHECK_MS", "96")
    monkeypatch.setenv("STT_TURN_COMPLETE", "0.7")
    monkeypatch.setenv("STT_TURN_MODEL", "off")
    monkeypatch.setenv("STT_END_OF_TURN_MS", "2500")
    config = STTConfig.from_env()
    assert (config.turn_check_ms, config.turn_complete, config.turn_model) == (96, 0.7, "off")
    assert config.end_of_turn_ms == 2500


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("STT_TURN_CHECK_MS", "10", "STT_TURN_CHECK_MS must be within 32-2000"),
        ("STT_TURN_COMPLETE", "1", "STT_TURN_COMPLETE must be within 0.01-0.99"),
        ("STT_TURN_COMPLETE", "half", "STT_TURN_COMPLETE must be a number"),
        ("STT_TURN_MODEL", "livekit", "STT_TURN_MODEL must be smart-turn or off"),
    ],
)
def test_a_bad_turn_setting_is_refused_by_name(monkeypatch, name: str, value: str, message: str):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        STTConfig.from_env()
