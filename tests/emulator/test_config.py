"""EmulatorConfig: every kind of field from the environment, bad values as ConfigError."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.config import ConfigError, EmulatorConfig


def test_config_from_env_parses_every_kind_of_field() -> None:
    config = EmulatorConfig.from_env(
        {
            "EMULATOR_HTTP_PORT": "9000",
            "EMULATOR_LATENCY_OUT_MS": "12.5",
            "EMULATOR_RECHUNK": "1-64",
            "EMULATOR_SIGV4_KEYS": "AKID1:s1,AKID2:s2",
            "EMULATOR_HOME": "/tmp/x",
            "EMULATOR_UNFRAGMENTED_COMPLETION_STATE": "absent",
            "EMULATOR_CLOSE_1000_IS_ERROR": "true",
            "EMULATOR_LLM_FIRST_TOKEN_MS": "100",
        }
    )
    assert config.http_port == 9000 and config.latency_out_ms == 12.5 and config.rechunk == (1, 64)
    assert config.sigv4_keys == {"AKID1": "s1", "AKID2": "s2"} and config.home == Path("/tmp/x")
    assert config.unfragmented_completion_state is None and config.close_1000_is_error
    assert config.llm_first_token_ms == 100


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EMULATOR_HTTP_PORT", "eighty"),
        ("EMULATOR_RECHUNK", "5-2"),
        ("EMULATOR_SIGV4_KEYS", "no-secret"),
        ("EMULATOR_IMAGES", "[1]"),
    ],
)
def test_bad_config_values_are_config_errors(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        EmulatorConfig.from_env({name: value})
