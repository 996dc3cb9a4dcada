"""What every reply model is: the `ReplyModel` interface, the request it answers (`ConverseRequest`), its
typed refusals and failures, and the text helpers the models share.

A `ReplyModel` turns one Converse request into a stream of text deltas; the Bedrock service wraps them
in Bedrock's wire format and maps the exceptions below to Bedrock's errors (this room imports no wire
code): `PromptTooLong` is Bedrock's 400 `ValidationException`, any other `ReplyModelError` its 424
`ModelErrorException` (or a `modelStreamErrorException` event once the stream has started).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# A token is a run of up to 8 word characters or one other character, with its leading whitespace:
# close to what a BPE tokenizer does to English ("order." -> " order", ".").
_TOKEN = re.compile(r"\s*(?:\w{1,8}|[^\w\s])")


class ReplyModelError(RuntimeError):
    """The model failed (unreachable, an HTTP error, a malformed stream); `status` is the status a model
    server answered, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PromptTooLong(ReplyModelError):
    """The model refuses a prompt that leaves too little of its context for the answer (a client error:
    Bedrock answers it as 400 `ValidationException`, "Input is too long for requested model")."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 400)


@dataclass(frozen=True)
class ConverseRequest:
    """The parts of a Bedrock Converse/ConverseStream request a reply backend needs."""

    model_id: str
    messages: Sequence[Mapping[str, Any]]
    system: Sequence[Mapping[str, Any]] = ()
    inference_config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """The text of the latest user message that has text (what a script matches against)."""
        for message in reversed(self.messages):
            if message.get("role") == "user" and (text := blocks_text(message.get("content", []))):
                return text
        return ""


class ReplyModel(Protocol):
    def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        """Yield the reply as text deltas, as they are produced.

        The Bedrock service calls this in its request handler, before it answers: a model that cannot
        take the request (a prompt longer than its context) raises `PromptTooLong` here, and the client
        gets that error (400 ValidationException) instead of a stream."""
        ...


def tokenize(text: str) -> list[str]:
    """Split text into token-sized pieces that join back to the stripped text."""
    return _TOKEN.findall(text.strip())


def blocks_text(blocks: Any) -> str:
    """The text of Bedrock content blocks (text, and the text inside tool results)."""
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(result := block.get("toolResult"), dict):
            parts.append(blocks_text(result.get("content", [])))
    return "\n".join(p for p in parts if p)


def openai_messages(request: ConverseRequest) -> list[dict[str, str]]:
    """Bedrock system + messages -> OpenAI chat messages with plain string content.

    Plain strings, not content-part lists: llama.cpp's chat templates fail on list content.
    Images, documents and tool-use blocks have no text and are left out.
    """
    messages: list[dict[str, str]] = []
    if system := "\n".join(b["text"] for b in request.system if isinstance(b.get("text"), str)):
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        messages.append({"role": str(message["role"]), "content": blocks_text(message.get("content", []))})
    return messages
