"""The paced script model: a scripted stand-in for a hosted model, not a language model.

Deterministic reply text, streamed token by token after a first-token latency and at a token rate like a
hosted model's, so latency comparisons (bidi vs batch) and tests that check a fixed answer are
repeatable without a GPU or an account.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import yaml

from emulator.config import ConfigError
from emulator.llm.base import ConverseRequest, tokenize

DEFAULT_REPLY = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like "
    "me to do that now?"
)


def load_script(path: str | Path) -> str | dict[str, str]:
    """Read a reply script file (YAML or JSON): one reply string, or a prompt substring -> reply mapping."""
    try:
        data = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the LLM script {path}: {exc}") from exc
    try:
        _script_pairs(data)
    except ValueError as exc:
        raise ConfigError(f"the LLM script {path}: {exc}") from exc
    return data


def _script_pairs(script: str | Mapping[str, str] | None) -> list[tuple[str, str]]:
    if script is None:
        return []
    if isinstance(script, str):
        script = {"": script}
    if not isinstance(script, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in script.items()
    ):
        raise ValueError("a script is a non-empty reply string or a mapping of prompt substring -> reply")
    return list(script.items())


class PacedScriptModel:
    """Deterministic replies streamed at a hosted model's pace (first-token latency, tokens per second).

    `script` is one reply for every prompt, or a mapping of prompt substring -> reply: the first
    substring (in order) found in the prompt, case-insensitively, picks the reply; an empty substring
    matches every prompt. Without a script or a match the reply is `DEFAULT_REPLY`, a four-sentence
    answer.
    """

    def __init__(
        self,
        first_token_ms: float = 400,
        tokens_per_s: float = 60.0,
        script: str | Mapping[str, str] | None = None,
    ) -> None:
        if not first_token_ms >= 0 or math.isinf(first_token_ms):
            raise ValueError(f"first_token_ms must be a finite number >= 0, got {first_token_ms!r}")
        if not tokens_per_s > 0:
            raise ValueError(f"tokens_per_s must be > 0, got {tokens_per_s!r}")
        self.first_token_ms = first_token_ms
        self.tokens_per_s = tokens_per_s
        self.script = _script_pairs(script)

    def reply_for(self, request: ConverseRequest) -> str:
        prompt = request.prompt.lower()
        for needle, reply in self.script:
            if needle.lower() in prompt:
                return reply
        return DEFAULT_REPLY

    async def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        first_due = loop.time() + self.first_token_ms / 1000
        for index, token in enumerate(tokenize(self.reply_for(request))):
            # Due times come from one clock so sleep overshoot does not accumulate.
            delay = first_due + index / self.tokens_per_s - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            yield token
