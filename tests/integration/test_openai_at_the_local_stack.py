"""OpenAI's speech API at the local stack: `local_stack()` runs `python -m gateway` in front of its
emulator, as a user runs it in front of AWS, and an OpenAI client at `LocalStack.openai_url` speaks."""

from __future__ import annotations

import openai
import pytest

from facts import TTS_ENDPOINT

pytestmark = pytest.mark.integration


def test_an_openai_client_speaks_at_the_local_stacks_gateway(stack) -> None:
    client = openai.OpenAI(base_url=stack.openai_url, api_key="unused", max_retries=0, timeout=180)
    assert {m.id for m in client.models.list()} == {TTS_ENDPOINT, "tts-1", "tts-1-hd"}
    speech = client.audio.speech.create(model="tts-1", voice="jm_kumo", input="Hello there.")
    assert speech.response.headers["content-type"] == "audio/mpeg"
    assert speech.content[:3] == b"ID3" or speech.content[0] == 0xFF
    assert len(speech.content) > 4000
