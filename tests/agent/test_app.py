"""The agent's payload rules: a payload becomes a turn, with its defaults, or a typed error."""

import pytest

from agent.app import PayloadError, parse_turn
from agent.config import AgentConfig

CONFIG = AgentConfig()


def test_a_valid_payload_becomes_a_turn_with_defaults():
    turn = parse_turn({"prompt": "Hi"}, CONFIG)
    assert (turn.prompt, turn.mode, turn.voice, turn.audio_format) == ("Hi", "bidi", "af_heart", "pcm")
    turn = parse_turn({"prompt": "Hi", "mode": "batch", "voice": "jf_nezumi", "format": "mp3"}, CONFIG)
    assert (turn.mode, turn.voice, turn.audio_format) == ("batch", "jf_nezumi", "mp3")


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ([], "invalid_payload"),
        ("hi", "invalid_payload"),
        ({}, "missing_prompt"),
        ({"prompt": "  "}, "missing_prompt"),
        ({"prompt": 3}, "invalid_prompt"),
        ({"prompt": ["Hi"]}, "invalid_prompt"),
        ({"prompt": "Hi", "mode": ["bidi"]}, "invalid_mode"),
        ({"prompt": "Hi", "mode": {}}, "invalid_mode"),
        ({"prompt": "Hi", "voice": 3}, "invalid_voice"),
        ({"prompt": "Hi", "format": ["pcm"]}, "invalid_format"),
        ({"prompt": "x" * 4001}, "prompt_too_long"),
        ({"prompt": "Hi", "mode": "stream"}, "invalid_mode"),
        ({"prompt": "Hi", "voice": ""}, "invalid_voice"),
        ({"prompt": "Hi", "format": "vorbis"}, "invalid_format"),
    ],
)
def test_bad_payloads_are_typed_errors(payload, code):
    with pytest.raises(PayloadError) as caught:
        parse_turn(payload, CONFIG)
    assert caught.value.code == code
