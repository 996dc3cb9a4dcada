"""What an agent writes is not what a listener hears: an answer in markdown (a heading, a numbered list,
bold and italic, a link, an emoji, an issue number, a version) from the emulated Bedrock, through the
agent and the real Kokoro container, is heard by an independent ASR without one markup word, and with
every word the listener should hear. The text shown on screen keeps its formatting."""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Iterator

import httpx
import pytest
import yaml

from emulator.config import EmulatorConfig
from local_stack.stack import LocalStack, local_stack
from tools.asr import transcribe
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

FORMATTED = (
    "## Three tips for tonight\n\n"
    "1. **Keep a schedule**: go to bed at the same time.\n"
    "2. *Dim the lights* an hour before.\n"
    "3. Read [the sleep guide](https://example.com/sleep-guide) 🎉\n\n"
    "See bug #42 in version 2.0 & later."
)
# What a listener would hear if the formatting were read out (each heard as such before speech text).
MARKUP_WORDS = {
    "asterisk", "asterisks", "star", "stars", "hash", "hashtag", "pound", "underscore", "backtick",
    "bracket", "brackets", "parenthesis", "http", "https", "slash", "com", "party", "popper", "tada",
}  # fmt: skip
# The words the listener should hear (speech text: "number 42", "two point oh", "and").
HEARD = ["schedule", "bed", "lights", "hour", "guide", "number", "42", "version", "and", "later"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    script = tmp_path_factory.mktemp("script") / "reply.yaml"
    script.write_text(yaml.safe_dump(FORMATTED), encoding="utf-8")
    config = dataclasses.replace(
        EmulatorConfig(),
        http_port=0,
        h2_port=0,
        home=tmp_path_factory.mktemp("emu"),
        llm_backend="script",
        llm_script=str(script),
        llm_first_token_ms=0,
        llm_tokens_per_s=200.0,
    )
    with local_stack(config) as running:
        yield running


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.mark.parametrize("mode", ["bidi", "batch"])
def test_a_formatted_answer_is_heard_without_a_markup_word(stack: LocalStack, mode: str) -> None:
    parser, events = SSEParser(), []
    payload = {"prompt": "How do I sleep better?", "mode": mode}
    with httpx.stream("POST", f"{stack.agent_url}/invocations", json=payload, timeout=120) as response:
        assert response.status_code == 200
        for raw in response.iter_raw():
            events += parser.feed(raw)
    shown = "".join(e["text"] for e in events if e["type"] == "text_delta")
    pcm = b"".join(base64.b64decode(e["data"]) for e in events if e["type"] == "audio_chunk")
    heard = words_of(transcribe(pcm))
    assert shown == FORMATTED, "the text shown keeps its formatting"
    assert not MARKUP_WORDS & set(heard), f"{mode}: markup read aloud: {' '.join(heard)}"
    missing = [word for word in HEARD if word not in heard]
    assert len(missing) <= 2, f"{mode}: not heard {missing} in: {' '.join(heard)}"
