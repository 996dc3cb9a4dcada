"""Bedrock Runtime's Converse/ConverseStream requests checked and typed into the `ConverseRequest` a
reply model answers; anything malformed is a ValidationException, with the real service's messages
where known."""

from __future__ import annotations

import itertools
import json
from typing import Any

from emulator.llm.base import ConverseRequest
from emulator.services.bedrock.errors import invalid

ROLES = {"user", "assistant"}


def parse_converse_request(model_id: str, raw: bytes) -> ConverseRequest:
    """Validate a Converse/ConverseStream body; anything malformed is a ValidationException."""
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, a huge integer, deep nesting
        raise invalid(f"Malformed input request: the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise invalid("Malformed input request: the body must be a JSON object")
    if not model_id:
        raise invalid("modelId must not be empty")
    _check_unicode(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages must be a non-empty list")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise invalid(f"messages.{index}: each message needs a role of 'user' or 'assistant'")
        content = message.get("content")
        if not isinstance(content, list) or not content or not all(isinstance(b, dict) for b in content):
            raise invalid(f"messages.{index}.content must be a non-empty list of content blocks")
        for block_index, block in enumerate(content):
            text = block.get("text")
            if "text" in block and (not isinstance(text, str) or not text.strip()):
                raise invalid(
                    f"The text field in the ContentBlock object at messages.{index}.content.{block_index} "
                    "is blank. Add text to the text field, and try again."
                )
    if messages[0]["role"] != "user":
        raise invalid(
            "A conversation must start with a user message. Try again with a conversation that starts "
            "with a user message."
        )
    if any(a["role"] == b["role"] for a, b in itertools.pairwise(messages)):
        raise invalid(
            "A conversation must alternate between user and assistant roles. Make sure the conversation "
            "alternates between user and assistant roles and try again."
        )
    system = body.get("system", [])
    if not isinstance(system, list) or not all(isinstance(b, dict) for b in system):
        raise invalid("system must be a list of content blocks")
    if not isinstance(body.get("toolConfig", {}), dict):
        raise invalid("toolConfig must be an object")
    return ConverseRequest(model_id, messages, system, _inference_config(body.get("inferenceConfig", {})))


def _check_unicode(body: Any) -> None:
    """Refuse a string that is not valid Unicode: JSON's `\\ud800` escape decodes to a lone surrogate,
    which no tokenizer can encode (the local model failed on it mid-stream, a 424 or a stream error
    event). Iterative, because a body may nest as deep as the JSON parser allowed."""
    pending: list[tuple[str, Any]] = [("", body)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, dict):
            pending.extend((f"{path}.{key}".lstrip("."), item) for key, item in value.items())
            pending.extend((f"{path}.<key>".lstrip("."), key) for key in value)
        elif isinstance(value, list):
            pending.extend((f"{path}.{index}".lstrip("."), item) for index, item in enumerate(value))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise invalid(
                    f"Malformed input request: {path or 'the body'} is not valid Unicode "
                    f"(a lone surrogate at character {exc.start})"
                ) from exc


def _inference_config(config: Any) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise invalid("inferenceConfig must be an object")
    max_tokens = config.get("maxTokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise invalid("inferenceConfig.maxTokens must be an integer >= 1")
    for name in ("temperature", "topP"):
        value = config.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1
        ):
            raise invalid(f"inferenceConfig.{name} must be a number from 0 to 1")
    stops = config.get("stopSequences")
    if stops is not None and (not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)):
        raise invalid("inferenceConfig.stopSequences must be a list of strings")
    return config
