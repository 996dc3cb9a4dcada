"""The emulator's Bedrock Runtime face: `Converse` and `ConverseStream`, enough for Strands'
`BedrockModel`.

`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`, one event per
text delta as soon as the reply backend (emulator.bedrock.models) produces it: messageStart,
contentBlockDelta..., contentBlockStop, messageStop, metadata. `POST /model/{modelId}/converse` answers
the whole reply as Bedrock's JSON. Any model id is accepted; the backend is the one the emulator config names.

Errors are the shared AWS envelope (emulator.wire.awserrors, restJson1 with Bedrock's lowercase
`message`), typed the way boto3 expects: a malformed request is HTTP 400 with `x-amzn-errortype:
ValidationException` (raised as `client.exceptions.ValidationException`), checked before the model sees
anything: a string that is not valid Unicode (a lone surrogate), a blank text block, a conversation that
does not start with a user message or does not alternate user/assistant, with the real service's
messages where known; a backend failure is HTTP 424
`ModelErrorException` for Converse and a `modelStreamErrorException` event once a stream has started; an
unexpected fault is `InternalServerException` (500, or its stream event). `inferenceConfig.maxTokens`
cuts the reply (stopReason `max_tokens`); `toolConfig` is accepted and answered in text (the backends
never call tools). Every request is recorded for tests to read (`GET /_emulator/bedrock/requests`,
emulator.bedrock.request_log).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from quart import Blueprint, Response, request

from emulator.bedrock.backends import reply_model_from_config
from emulator.bedrock.models import (
    ConverseRequest,
    ModelBackendError,
    ReplyModel,
    tokenize,
)
from emulator.bedrock.request_log import RequestLog
from emulator.bedrock.smollm import SmolLM2Model
from emulator.wire import eventstream
from emulator.wire.awserrors import AwsError, render_errors, request_id, rest_json_error

logger = logging.getLogger(__name__)

EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"
_ROLES = {"user", "assistant"}


def _invalid(message: str) -> AwsError:
    return AwsError("ValidationException", message, 400)


def _error_response(error: AwsError) -> Response:
    return rest_json_error(error, message_member="message")


def parse_converse_request(model_id: str, raw: bytes) -> ConverseRequest:
    """Validate a Converse/ConverseStream body; anything malformed is a ValidationException."""
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, a huge integer, deep nesting
        raise _invalid(f"Malformed input request: the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise _invalid("Malformed input request: the body must be a JSON object")
    if not model_id:
        raise _invalid("modelId must not be empty")
    _check_unicode(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages must be a non-empty list")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _invalid(f"messages.{index}: each message needs a role of 'user' or 'assistant'")
        content = message.get("content")
        if not isinstance(content, list) or not content or not all(isinstance(b, dict) for b in content):
            raise _invalid(f"messages.{index}.content must be a non-empty list of content blocks")
        for block_index, block in enumerate(content):
            text = block.get("text")
            if "text" in block and (not isinstance(text, str) or not text.strip()):
                raise _invalid(
                    f"The text field in the ContentBlock object at messages.{index}.content.{block_index} "
                    "is blank. Add text to the text field, and try again."
                )
    if messages[0]["role"] != "user":
        raise _invalid(
            "A conversation must start with a user message. Try again with a conversation that starts "
            "with a user message."
        )
    if any(a["role"] == b["role"] for a, b in itertools.pairwise(messages)):
        raise _invalid(
            "A conversation must alternate between user and assistant roles. Make sure the conversation "
            "alternates between user and assistant roles and try again."
        )
    system = body.get("system", [])
    if not isinstance(system, list) or not all(isinstance(b, dict) for b in system):
        raise _invalid("system must be a list of content blocks")
    if not isinstance(body.get("toolConfig", {}), dict):
        raise _invalid("toolConfig must be an object")
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
                raise _invalid(
                    f"Malformed input request: {path or 'the body'} is not valid Unicode "
                    f"(a lone surrogate at character {exc.start})"
                ) from exc


def _inference_config(config: Any) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise _invalid("inferenceConfig must be an object")
    max_tokens = config.get("maxTokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise _invalid("inferenceConfig.maxTokens must be an integer >= 1")
    for name in ("temperature", "topP"):
        value = config.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1
        ):
            raise _invalid(f"inferenceConfig.{name} must be a number from 0 to 1")
    stops = config.get("stopSequences")
    if stops is not None and (not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)):
        raise _invalid("inferenceConfig.stopSequences must be a list of strings")
    return config


def _input_tokens(parsed: ConverseRequest) -> int:
    texts = [b.get("text", "") for b in parsed.system] + [
        b.get("text", "") for m in parsed.messages for b in m["content"]
    ]
    return sum(len(tokenize(t)) for t in texts if isinstance(t, str))


def _usage(parsed: ConverseRequest, output_tokens: int) -> dict[str, int]:
    input_tokens = _input_tokens(parsed)
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }


class _Generation:
    """One reply being generated: its deltas (cut at maxTokens), stop reason and token count."""

    def __init__(self, model: ReplyModel, parsed: ConverseRequest) -> None:
        # Opened here, in the handler: a backend may refuse the request (an AwsError) before any event.
        self._stream = model.stream(parsed)
        self._parsed = parsed
        self.stop_reason = "end_turn"
        self.output_tokens = 0

    async def deltas(self) -> AsyncIterator[str]:
        max_tokens = self._parsed.inference_config.get("maxTokens")
        async with contextlib.aclosing(self._stream) as stream:
            async for delta in stream:
                self.output_tokens += 1
                yield delta
                if max_tokens is not None and self.output_tokens >= max_tokens:
                    self.stop_reason = "max_tokens"
                    return


def _event(name: str, payload: Mapping[str, Any]) -> bytes:
    return eventstream.event(name, json.dumps(payload).encode())


def bedrock_blueprint(config: Any, model: ReplyModel | None = None, *, preload: bool = True) -> Blueprint:
    """Routes for Bedrock Runtime; `config` needs the `llm_*` fields of `EmulatorConfig`.

    `model` overrides the backend the config names (any `ReplyModel`). `preload`: a local model starts
    loading when the server starts (about 1 GB and tens of seconds), rather than on the first request;
    off where nothing is expected to call Bedrock (a manifest with no agent runtime).
    """
    model = model or reply_model_from_config(config)
    blueprint = Blueprint("bedrock", __name__)
    render_errors(blueprint, _error_response)
    requests = RequestLog()

    if preload and isinstance(model, SmolLM2Model):

        @blueprint.before_app_serving
        async def start_loading_the_model() -> None:
            model.warm()

    @blueprint.post("/model/<path:model_id>/converse-stream")
    async def converse_stream(model_id: str) -> Response:
        parsed = parse_converse_request(model_id, await request.get_data())
        generation = _Generation(model, parsed)
        events = requests.follow(
            requests.start(parsed), _stream_events(generation, parsed), lambda: generation.output_tokens
        )
        response = Response(events, content_type=EVENTSTREAM_CONTENT_TYPE)
        response.headers["x-amzn-requestid"] = request_id()
        response.timeout = None  # a slow model may stream for longer than RESPONSE_TIMEOUT
        return response

    @blueprint.post("/model/<path:model_id>/converse")
    async def converse(model_id: str) -> Response:
        parsed = parse_converse_request(model_id, await request.get_data())
        loop = asyncio.get_running_loop()
        started = loop.time()
        generation = _Generation(model, parsed)
        entry = requests.start(parsed)
        try:
            text = "".join([delta async for delta in generation.deltas()])
        except ModelBackendError as exc:
            raise AwsError(
                "ModelErrorException",
                str(exc),
                424,
                **({"originalStatusCode": exc.status} if exc.status else {}),
            ) from exc
        except Exception as exc:
            logger.exception("the reply backend failed")
            raise AwsError("InternalServerException", f"the reply backend failed: {exc!r}", 500) from exc
        finally:
            requests.end(entry, generation.output_tokens)
        body = {
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": generation.stop_reason,
            "usage": _usage(parsed, generation.output_tokens),
            "metrics": {"latencyMs": round((loop.time() - started) * 1000)},
        }
        return Response(
            json.dumps(body), content_type="application/json", headers={"x-amzn-requestid": request_id()}
        )

    @blueprint.get("/_emulator/bedrock/requests")
    async def recorded_requests() -> Response:
        """The model requests this face answered (emulator.bedrock.request_log): not an AWS API."""
        return Response(json.dumps(requests.entries()), content_type="application/json")

    return blueprint


async def _stream_events(generation: _Generation, parsed: ConverseRequest) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    yield _event("messageStart", {"role": "assistant"})
    try:
        async for delta in generation.deltas():
            yield _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": delta}})
    except ModelBackendError as exc:
        fields: dict[str, Any] = {"message": str(exc), "originalMessage": str(exc)}
        if exc.status:
            fields["originalStatusCode"] = exc.status
        yield eventstream.exception("modelStreamErrorException", json.dumps(fields).encode())
        return
    except Exception as exc:
        logger.exception("the reply backend failed")
        message = json.dumps({"message": f"the reply backend failed: {exc!r}"}).encode()
        yield eventstream.exception("internalServerException", message)
        return
    yield _event("contentBlockStop", {"contentBlockIndex": 0})
    yield _event("messageStop", {"stopReason": generation.stop_reason})
    latency_ms = round((loop.time() - started) * 1000)
    yield _event(
        "metadata", {"usage": _usage(parsed, generation.output_tokens), "metrics": {"latencyMs": latency_ms}}
    )
