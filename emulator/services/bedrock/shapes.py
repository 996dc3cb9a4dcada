"""Bedrock Runtime's Converse/ConverseStream requests checked and typed into the `ConverseRequest` a
reply model answers; anything malformed is a ValidationException, with the real service's messages
where known.

The model ID is checked first, against `KnownModels`: the one table of the IDs the emulator answers,
each answered by the one local reply model the config names (emulator.llm). An ID outside botocore's
`ConversationalModelId` constraints (1-2048 characters of its pattern) is malformed; a well-formed ID
that names no known model is Bedrock's ValidationException "The provided model identifier is invalid."
(a typo'd `--bedrock-model-id` fails here as it does on AWS), and an ARN that names no known model its
404 ResourceNotFoundException.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from emulator.llm.base import ConverseRequest
from emulator.services.bedrock.errors import invalid, not_found

ROLES = {"user", "assistant"}

FOUNDATION_MODELS = frozenset(
    {
        # Anthropic (the agent's default, `global.anthropic.claude-sonnet-4-6`, and the deploy tests')
        "anthropic.claude-sonnet-4-6",
        "anthropic.claude-opus-4-6-v1",
        "anthropic.claude-opus-5",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-opus-4-5-20251101-v1:0",
        "anthropic.claude-opus-4-1-20250805-v1:0",
        "anthropic.claude-sonnet-4-20250514-v1:0",
        "anthropic.claude-opus-4-20250514-v1:0",
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "anthropic.claude-3-5-sonnet-20241022-v2:0",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        # Amazon Nova
        "amazon.nova-micro-v1:0",
        "amazon.nova-lite-v1:0",
        "amazon.nova-pro-v1:0",
        "amazon.nova-premier-v1:0",
        "amazon.nova-2-lite-v1:0",
        # Meta, Mistral, DeepSeek, OpenAI's open weights, Qwen
        "meta.llama3-1-8b-instruct-v1:0",
        "meta.llama3-1-70b-instruct-v1:0",
        "meta.llama3-2-1b-instruct-v1:0",
        "meta.llama3-2-3b-instruct-v1:0",
        "meta.llama3-3-70b-instruct-v1:0",
        "meta.llama4-maverick-17b-instruct-v1:0",
        "meta.llama4-scout-17b-instruct-v1:0",
        "mistral.mistral-large-2407-v1:0",
        "mistral.pixtral-large-2502-v1:0",
        "deepseek.r1-v1:0",
        "openai.gpt-oss-20b-1:0",
        "openai.gpt-oss-120b-1:0",
        "qwen.qwen3-32b-v1:0",
    }
)
"""Foundation-model IDs Bedrock serves (docs.aws.amazon.com/bedrock/latest/userguide/models-supported):
the emulator answers each, and each geography's inference profile of each, with its local model."""

PROFILE_GEOGRAPHIES = frozenset({"us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"})
"""Cross-region inference profiles are `<geography>.<foundation model>` (`us.`, `global.`)."""

MODEL_ID_PATTERN = re.compile(
    r"arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:"
    r"(?P<account>[0-9]{12})?:(?P<kind>foundation-model|inference-profile|application-inference-profile"
    r"|custom-model|imported-model|provisioned-model|custom-model-deployment|prompt|(default-)?prompt-router)"
    r"/(?P<resource>[a-zA-Z0-9-:._/]+)"
    r"|[a-zA-Z0-9-:._]+"
)
"""What botocore's `ConversationalModelId` pattern admits, in two parts: an ARN (which names its kind
and resource) or a bare ID (letters, digits, `-:._`)."""

MAX_MODEL_ID = 2048


@dataclass(frozen=True)
class KnownModels:
    """The model IDs the emulated Bedrock answers: `FOUNDATION_MODELS`, their inference profiles, their
    ARNs, and `extra`: any more IDs or ARNs a user names (`EMULATOR_BEDROCK_MODEL_IDS`, comma separated;
    a bare foundation-model ID there brings its profiles and ARNs along)."""

    extra: tuple[str, ...] = ()

    def check(self, model_id: str) -> None:
        """Raise Bedrock's error for an ID it would refuse; return for one the local model answers."""
        match = MODEL_ID_PATTERN.fullmatch(model_id) if 0 < len(model_id) <= MAX_MODEL_ID else None
        if match is None:
            raise invalid(
                f"1 validation error detected: Value '{model_id[:200]}' at 'modelId' failed to satisfy "
                f"constraint: Member must have length less than or equal to {MAX_MODEL_ID} and satisfy "
                "regular expression pattern: (arn:aws(-[^:]+)?:bedrock:...)|([a-zA-Z0-9-:.]+)"
            )
        if model_id in self.extra or self._known(match.group("resource") or model_id):
            return
        if match.group("kind"):
            raise not_found(f"The specified resource ARN was not found: {model_id}")
        raise invalid("The provided model identifier is invalid.")

    def _known(self, model_id: str) -> bool:
        foundation = FOUNDATION_MODELS | set(self.extra)
        geography, _, rest = model_id.partition(".")
        return model_id in foundation or (geography in PROFILE_GEOGRAPHIES and rest in foundation)


def parse_converse_request(model_id: str, raw: bytes, models: KnownModels = KnownModels()) -> ConverseRequest:
    """Validate a Converse/ConverseStream request: its model ID (`models`), then its body; anything
    malformed is a ValidationException, an unknown ARN a ResourceNotFoundException."""
    models.check(model_id)
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, a huge integer, deep nesting
        raise invalid(f"Malformed input request: the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise invalid("Malformed input request: the body must be a JSON object")
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
