"""Bedrock Runtime's data plane: `Converse` and `ConverseStream`, enough for Strands' `BedrockModel`.

`POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`, one event per
text delta as soon as the reply model (emulator.llm) produces it: messageStart,
contentBlockDelta..., contentBlockStop, messageStop, metadata. `POST /model/{modelId}/converse` answers
the whole reply as Bedrock's JSON. The model ID must be one Bedrock knows (shapes.KnownModels, which
`EMULATOR_BEDROCK_MODEL_IDS` extends); every known ID is answered by the one model the config names.

Errors are the shared AWS envelope (emulator.wire.awserrors, restJson1 with Bedrock's lowercase
`message`), typed the way boto3 expects: a malformed request is HTTP 400 with `x-amzn-errortype:
ValidationException` (raised as `client.exceptions.ValidationException`), checked before the model sees
anything (shapes.py): a string that is not valid Unicode (a lone surrogate), a blank text block, a
conversation that does not start with a user message or does not alternate user/assistant, with the
real service's messages where known; a prompt the model cannot fit (`PromptTooLong`) is the same 400; a
model failure is HTTP 424 `ModelErrorException` for Converse and a `modelStreamErrorException` event
once a stream has started; an unexpected fault is `InternalServerException` (500, or its stream
event). `inferenceConfig.maxTokens` cuts the reply (stopReason `max_tokens`); `toolConfig` is accepted
and answered in text (the models never call tools). Every request is recorded for tests to read
(`request_log.py`, served at `GET /_emulator/bedrock/requests` by emulator/admin/routes.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from quart import Response, request

from emulator.llm.base import ConverseRequest, PromptTooLong, ReplyModel, ReplyModelError, tokenize
from emulator.services.bedrock.errors import internal_error, invalid, model_error
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.bedrock.shapes import KnownModels, parse_converse_request
from emulator.wire import eventstream
from emulator.wire.awserrors import request_id
from emulator.wire.bodies import body_limit
from emulator.wire.views import Handler

logger = logging.getLogger(__name__)

EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"
MAX_REQUEST = 10 * 1024 * 1024
"""The local models read text only and hold 8,192 tokens (about 32 KB of text); 10 MiB takes any
conversation Strands sends them, with room for its tool specifications."""


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
        # Opened here, in the handler: a model may refuse the request (PromptTooLong) before any event.
        try:
            self._stream = model.stream(parsed)
        except PromptTooLong as exc:
            raise invalid(str(exc)) from exc
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


def runtime_handlers(model: ReplyModel, log: RequestLog, models: KnownModels) -> dict[str, Handler]:
    """Converse and ConverseStream over `model` for the model IDs `models` knows, every request recorded
    in `log` (served by routes.py)."""

    @body_limit(MAX_REQUEST)
    async def converse_stream(model_id: str) -> Response:
        parsed = parse_converse_request(model_id, await request.get_data(), models)
        generation = _Generation(model, parsed)
        events = log.follow(
            log.start(parsed), _stream_events(generation, parsed), lambda: generation.output_tokens
        )
        response = Response(events, content_type=EVENTSTREAM_CONTENT_TYPE)
        response.headers["x-amzn-requestid"] = request_id()
        response.timeout = None  # a slow model may stream for longer than RESPONSE_TIMEOUT
        return response

    @body_limit(MAX_REQUEST)
    async def converse(model_id: str) -> Response:
        parsed = parse_converse_request(model_id, await request.get_data(), models)
        loop = asyncio.get_running_loop()
        started = loop.time()
        generation = _Generation(model, parsed)
        entry = log.start(parsed)
        try:
            text = "".join([delta async for delta in generation.deltas()])
        except PromptTooLong as exc:
            raise invalid(str(exc)) from exc
        except ReplyModelError as exc:
            raise model_error(exc) from exc
        except Exception as exc:
            logger.exception("the reply model failed")
            raise internal_error(exc) from exc
        finally:
            log.end(entry, generation.output_tokens)
        body = {
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": generation.stop_reason,
            "usage": _usage(parsed, generation.output_tokens),
            "metrics": {"latencyMs": round((loop.time() - started) * 1000)},
        }
        return Response(
            json.dumps(body), content_type="application/json", headers={"x-amzn-requestid": request_id()}
        )

    return {"Converse": converse, "ConverseStream": converse_stream}


async def _stream_events(generation: _Generation, parsed: ConverseRequest) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    started = loop.time()
    yield _event("messageStart", {"role": "assistant"})
    try:
        async for delta in generation.deltas():
            yield _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": delta}})
    except ReplyModelError as exc:
        fields: dict[str, Any] = {"message": str(exc), "originalMessage": str(exc)}
        if exc.status:
            fields["originalStatusCode"] = exc.status
        yield eventstream.exception("modelStreamErrorException", json.dumps(fields).encode())
        return
    except Exception as exc:
        logger.exception("the reply model failed")
        message = json.dumps({"message": f"the reply model failed: {exc!r}"}).encode()
        yield eventstream.exception("internalServerException", message)
        return
    yield _event("contentBlockStop", {"contentBlockIndex": 0})
    yield _event("messageStop", {"stopReason": generation.stop_reason})
    latency_ms = round((loop.time() - started) * 1000)
    yield _event(
        "metadata", {"usage": _usage(parsed, generation.output_tokens), "metrics": {"latencyMs": latency_ms}}
    )
