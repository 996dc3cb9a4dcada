"""The emulator's Bedrock Runtime, driven by the official clients (boto3, Strands' BedrockModel).

Each backend runs behind the real blueprint in a real Hypercorn server on a loopback port. The
OpenAI-compatible backend talks to `openai_double`, a small Starlette server standing in for an
external llama.cpp/vLLM server (a test double for a process we do not run here).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
import httpx
import pytest
from hypercorn.asyncio import serve
from hypercorn.config import Config as HypercornConfig
from quart import Quart
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from emulator.admin.routes import admin_blueprint
from emulator.config import ConfigError, EmulatorConfig
from emulator.controller.store import Store
from emulator.llm.base import ConverseRequest, ReplyModelError, tokenize
from emulator.llm.openai_compatible import OpenAICompatibleModel
from emulator.llm.script import DEFAULT_REPLY, PacedScriptModel, load_script
from emulator.processes import free_port
from emulator.services.bedrock import routes as bedrock_routes
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.services.cloudwatch.runtime import Metrics
from emulator.wire import eventstream

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients

FIRST_TOKEN_MS = 300
TOKENS_PER_S = 200.0
MODEL_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
CREDENTIALS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "local-secret"}


def llm_config(**overrides: Any) -> SimpleNamespace:
    fields = {
        "llm_backend": "script",
        "llm_first_token_ms": FIRST_TOKEN_MS,
        "llm_tokens_per_s": TOKENS_PER_S,
        "llm_script": None,
        "llm_openai_base_url": None,
        "llm_openai_model": None,
        "bedrock_model_ids": (),
    }
    return SimpleNamespace(**{**fields, **overrides})


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run an ASGI app in Hypercorn on a free loopback port, in a thread with its own event loop."""
    port = free_port()
    config = HypercornConfig()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    loop = asyncio.new_event_loop()
    shutdown = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete,
        args=(serve(app, config, shutdown_trigger=shutdown.wait),),
        daemon=True,
    )
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline or not thread.is_alive():
                raise
            time.sleep(0.05)
    try:
        yield url
    finally:
        loop.call_soon_threadsafe(shutdown.set)
        thread.join(10)
        loop.close()


def bedrock_app(config: SimpleNamespace, model: Any = None) -> Quart:
    """Bedrock's routes with the operator's record of what they answered (`GET
    /_emulator/bedrock/requests`, emulator/admin/routes.py), wired as emulator/server/app.py wires them."""
    requests = RequestLog()
    app = Quart(__name__)
    for blueprint in bedrock_routes.blueprints(config, requests, model=model):
        app.register_blueprint(blueprint)
    app.register_blueprint(
        admin_blueprint(Store(), dict, requests, CloudWatchControl(Metrics(), "us-east-1", "1"))
    )
    return app


class OpenAIDouble:
    """Stands in for an external OpenAI-compatible server: streams `You said: <prompt>` word by word.

    It records every chat request; a prompt containing FAIL500 gets HTTP 500.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/models", self.models),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
            ]
        )

    async def models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "double-model", "object": "model"}]})

    async def chat(self, request: Request) -> JSONResponse | StreamingResponse:
        body = await request.json()
        self.requests.append(body)
        prompt = body["messages"][-1]["content"]
        if "FAIL500" in prompt:
            return JSONResponse({"error": {"message": "the double failed on purpose"}}, status_code=500)
        words = f"You said: {prompt}".split(" ")

        async def chunks() -> Any:
            for index, word in enumerate(words):
                piece = word if index == 0 else " " + word
                delta = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                yield f"data: {json.dumps(delta)}\n\n"
                await asyncio.sleep(0.01)
            yield 'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
            yield "data: [DONE]\n\n"

        return StreamingResponse(chunks(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def paced_url() -> Iterator[str]:
    with serving(bedrock_app(llm_config())) as url:
        yield url


@pytest.fixture(scope="module")
def openai_double() -> Iterator[tuple[OpenAIDouble, str]]:
    double = OpenAIDouble()
    with serving(double.app) as url:
        yield double, url


@pytest.fixture(scope="module")
def openai_backed_url(openai_double: tuple[OpenAIDouble, str]) -> Iterator[str]:
    _, double_url = openai_double
    with serving(bedrock_app(llm_config(llm_openai_base_url=f"{double_url}/v1"))) as url:
        yield url


def bedrock_client(url: str) -> Any:
    no_retries = botocore.config.Config(retries={"total_max_attempts": 1})
    return boto3.client(
        "bedrock-runtime", endpoint_url=url, region_name="us-east-1", config=no_retries, **CREDENTIALS
    )


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def stream_texts(response: dict[str, Any]) -> tuple[list[str], list[str], list[float]]:
    """(event names, text deltas, arrival times) of a converse_stream response."""
    names, texts, times = [], [], []
    for event in response["stream"]:
        (name,) = event
        names.append(name)
        if name == "contentBlockDelta":
            texts.append(event[name]["delta"]["text"])
            times.append(time.monotonic())
    return names, texts, times


def test_converse_stream_with_boto3(paced_url: str) -> None:
    response = bedrock_client(paced_url).converse_stream(
        modelId=MODEL_ID, messages=[user("Where is my order?")], system=[{"text": "Be brief."}]
    )
    names, texts, _ = stream_texts(response)
    assert names[0] == "messageStart"
    assert names[-3:] == ["contentBlockStop", "messageStop", "metadata"]
    assert set(names[1:-3]) == {"contentBlockDelta"}
    assert "".join(texts) == DEFAULT_REPLY
    assert len(texts) == len(tokenize(DEFAULT_REPLY))


@pytest.mark.parametrize(
    "model_id", [MODEL_ID, f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{MODEL_ID}"]
)
def test_converse_with_boto3(paced_url: str, model_id: str) -> None:
    response = bedrock_client(paced_url).converse(modelId=model_id, messages=[user("Where is my order?")])
    assert response["output"]["message"]["content"][0]["text"] == DEFAULT_REPLY
    assert response["stopReason"] == "end_turn"
    assert response["usage"]["outputTokens"] == len(tokenize(DEFAULT_REPLY))
    assert (
        response["usage"]["totalTokens"]
        == response["usage"]["inputTokens"] + response["usage"]["outputTokens"]
    )
    assert response["metrics"]["latencyMs"] >= FIRST_TOKEN_MS


def test_max_tokens_cuts_the_reply(paced_url: str) -> None:
    response = bedrock_client(paced_url).converse(
        modelId=MODEL_ID, messages=[user("hi")], inferenceConfig={"maxTokens": 5}
    )
    assert response["stopReason"] == "max_tokens"
    assert response["output"]["message"]["content"][0]["text"] == "".join(tokenize(DEFAULT_REPLY)[:5])


def test_tool_config_is_answered_in_text(paced_url: str) -> None:
    tool = {"toolSpec": {"name": "lookup", "description": "d", "inputSchema": {"json": {"type": "object"}}}}
    response = bedrock_client(paced_url).converse(
        modelId=MODEL_ID, messages=[user("hi")], toolConfig={"tools": [tool]}
    )
    assert response["stopReason"] == "end_turn"
    assert response["output"]["message"]["content"][0]["text"] == DEFAULT_REPLY


def test_pacing_is_observable(paced_url: str) -> None:
    started = time.monotonic()
    response = bedrock_client(paced_url).converse_stream(modelId=MODEL_ID, messages=[user("hi")])
    _, texts, times = stream_texts(response)
    first_ms = (times[0] - started) * 1000
    spread_s = times[-1] - times[0]
    assert first_ms >= 0.8 * FIRST_TOKEN_MS
    # The deltas are spread over the generation time, not sent in one burst at the end.
    assert spread_s >= 0.8 * (len(texts) - 1) / TOKENS_PER_S


def test_raw_event_stream_framing(paced_url: str) -> None:
    with httpx.stream(
        "POST", f"{paced_url}/model/{MODEL_ID}/converse-stream", json={"messages": [user("hi")]}
    ) as response:
        assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
        decoder = eventstream.Decoder()
        messages = [m for chunk in response.iter_bytes() for m in decoder.feed(chunk)]
    assert decoder.pending == 0
    assert {m.message_type for m in messages} == {"event"}
    assert {m.headers[":content-type"] for m in messages} == {"application/json"}
    metadata = json.loads(messages[-1].payload)
    assert messages[-1].event_type == "metadata"
    assert metadata["usage"]["outputTokens"] == len(messages) - 4
    assert metadata["metrics"]["latencyMs"] >= FIRST_TOKEN_MS
    assert json.loads(messages[-2].payload) == {"stopReason": "end_turn"}


async def test_strands_agent_streams_the_scripted_text(
    paced_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from strands import Agent
    from strands.models import BedrockModel

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    model = BedrockModel(model_id=MODEL_ID, endpoint_url=paced_url, region_name="us-east-1")
    agent = Agent(model=model, callback_handler=None)
    deltas = [event["data"] async for event in agent.stream_async("Where is my order?") if "data" in event]
    assert "".join(deltas) == DEFAULT_REPLY
    assert len(deltas) > 10


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "assistant", "content": [{"text": "I speak first"}]}],
        [{"role": "user", "content": []}],
        # the real service's fidelity: blank text blocks and two turns of one role in a row
        [{"role": "user", "content": [{"text": ""}]}],
        [{"role": "user", "content": [{"text": " \n\t"}]}],
        [user("Hi."), {"role": "assistant", "content": [{"text": "   "}]}, user("Again.")],
        [user("Hi."), user("Hello?")],
        [user("Hi."), {"role": "assistant", "content": [{"text": "Yes?"}]}, user("a"), user("b")],
        # a lone surrogate: boto3 sends it as the JSON escape \ud800 (it was a 424 from the local model)
        [user("Say \ud800 this.")],
    ],
    ids=[
        "assistant-first",
        "no-content",
        "empty-text",
        "blank-text",
        "blank-assistant",
        "two-users",
        "two-users-later",
        "lone-surrogate",
    ],
)
def test_malformed_request_raises_validation_exception(
    paced_url: str, messages: list[dict[str, Any]]
) -> None:
    client = bedrock_client(paced_url)
    with pytest.raises(client.exceptions.ValidationException):
        client.converse(modelId=MODEL_ID, messages=messages)
    with pytest.raises(client.exceptions.ValidationException):
        client.converse_stream(modelId=MODEL_ID, messages=messages)


@pytest.mark.parametrize(
    ("model_id", "code", "status", "message"),
    [
        ("no.such-model-v9", "ValidationException", 400, "The provided model identifier is invalid."),
        ("m", "ValidationException", 400, "The provided model identifier is invalid."),
        (
            "anthropic.claude-sonnet-4-6x",
            "ValidationException",
            400,
            "The provided model identifier is invalid.",
        ),
        (
            "mars.anthropic.claude-sonnet-4-6",
            "ValidationException",
            400,
            "The provided model identifier is invalid.",
        ),
        ("not a model", "ValidationException", 400, "failed to satisfy constraint"),
        ("a" * 2049, "ValidationException", 400, "failed to satisfy constraint"),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/acme.nothing-v1:0",
            "ResourceNotFoundException",
            404,
            "ARN was not found",
        ),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.acme.nothing-v1:0",
            "ResourceNotFoundException",
            404,
            "ARN was not found",
        ),
    ],
)
def test_a_model_id_bedrock_does_not_know_is_refused_as_bedrock_refuses_it(
    paced_url: str, model_id: str, code: str, status: int, message: str
) -> None:
    client = bedrock_client(paced_url)
    for call in (client.converse, client.converse_stream):
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            call(modelId=model_id, messages=[user("hi")])
        error = caught.value.response
        assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (code, status)
        assert message in error["Error"]["Message"]


@pytest.mark.parametrize(
    "model_id",
    [
        "global.anthropic.claude-sonnet-4-6",  # the agent's default --bedrock-model-id
        "us.anthropic.claude-haiku-4-5-20251001-v1:0",  # the deploy tests'
        "us.amazon.nova-lite-v1:0",
        "amazon.nova-lite-v1:0",
        "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
    ],
)
def test_the_ids_bedrock_knows_are_answered_by_the_local_model(paced_url: str, model_id: str) -> None:
    response = bedrock_client(paced_url).converse(modelId=model_id, messages=[user("hi")])
    assert response["output"]["message"]["content"][0]["text"] == DEFAULT_REPLY


def test_the_table_of_known_ids_is_extended_by_the_config() -> None:
    config = EmulatorConfig.from_env({"EMULATOR_BEDROCK_MODEL_IDS": "acme.voice-v1:0, arn:aws:bedrock:x"})
    assert config.bedrock_model_ids == ("acme.voice-v1:0", "arn:aws:bedrock:x")
    with serving(bedrock_app(llm_config(bedrock_model_ids=config.bedrock_model_ids))) as url:
        client = bedrock_client(url)
        for model_id in ("acme.voice-v1:0", "global.acme.voice-v1:0"):
            response = client.converse(modelId=model_id, messages=[user("hi")])
            assert response["output"]["message"]["content"][0]["text"] == DEFAULT_REPLY
        with pytest.raises(client.exceptions.ValidationException):
            client.converse(modelId="acme.voice-v2:0", messages=[user("hi")])


def _body(**fields: Any) -> bytes:
    return json.dumps({"messages": [user("x")], **fields}).encode()


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"messages": "hi"}',
        b'{"messages": [{"role": "system", "content": [{"text": "x"}]}]}',
        _body(inferenceConfig={"maxTokens": 0}),
        _body(inferenceConfig={"temperature": 3}),
        _body(inferenceConfig={"stopSequences": "END"}),
        _body(system="be brief"),
        _body(toolConfig=[]),
    ],
)
@pytest.mark.parametrize("operation", ["converse", "converse-stream"])
def test_malformed_body_is_a_typed_400(paced_url: str, body: bytes, operation: str) -> None:
    response = httpx.post(f"{paced_url}/model/{MODEL_ID}/{operation}", content=body)
    assert response.status_code == 400
    assert response.headers["x-amzn-errortype"] == "ValidationException"
    assert response.json()["message"]


def test_openai_backend_streams_through_bedrock(
    openai_backed_url: str, openai_double: tuple[OpenAIDouble, str]
) -> None:
    double, _ = openai_double
    response = bedrock_client(openai_backed_url).converse_stream(
        modelId=MODEL_ID,
        messages=[user("first"), {"role": "assistant", "content": [{"text": "ok"}]}, user("tell me more")],
        system=[{"text": "Be brief."}],
        inferenceConfig={"maxTokens": 50, "temperature": 0.2},
    )
    names, texts, _ = stream_texts(response)
    assert "".join(texts) == "You said: tell me more"
    assert len(texts) == 5
    assert names[-2:] == ["messageStop", "metadata"]
    sent = double.requests[-1]
    assert sent["stream"] is True
    assert sent["model"] == "double-model"  # discovered through GET /v1/models
    assert sent["max_tokens"] == 50 and sent["temperature"] == 0.2
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "tell me more"},
    ]


def test_openai_backend_error_is_typed(openai_backed_url: str) -> None:
    client = bedrock_client(openai_backed_url)
    with pytest.raises(client.exceptions.ModelErrorException) as raised:
        client.converse(modelId=MODEL_ID, messages=[user("FAIL500 please")])
    assert raised.value.response["originalStatusCode"] == 500
    response = client.converse_stream(modelId=MODEL_ID, messages=[user("FAIL500 please")])
    with pytest.raises(botocore.exceptions.EventStreamError) as streamed:
        stream_texts(response)
    assert streamed.value.response["Error"]["Code"] == "modelStreamErrorException"


async def test_openai_backend_unreachable_raises_backend_error() -> None:
    model = OpenAICompatibleModel(f"http://127.0.0.1:{free_port()}", model="m")
    assert model.base_url.endswith("/v1")
    with pytest.raises(ReplyModelError):
        async for _ in model.stream(ConverseRequest(MODEL_ID, [user("hi")])):
            pass


def test_script_file_picks_replies(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text('refund: "Your refund is on its way."\n"": "Anything else?"\n')
    model = PacedScriptModel(script=load_script(script))
    assert (
        model.reply_for(ConverseRequest(MODEL_ID, [user("I want a REFUND now")]))
        == "Your refund is on its way."
    )
    assert model.reply_for(ConverseRequest(MODEL_ID, [user("hello")])) == "Anything else?"
    assert PacedScriptModel().reply_for(ConverseRequest(MODEL_ID, [user("hello")])) == DEFAULT_REPLY
    assert (
        PacedScriptModel(script="One reply.").reply_for(ConverseRequest(MODEL_ID, [user("x")]))
        == "One reply."
    )


@pytest.mark.parametrize("content", ["[1, 2]", "a: 3", "{{{", "refund: ''"])
def test_bad_script_file_is_a_config_error(tmp_path: Path, content: str) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(content)
    with pytest.raises(ConfigError):
        load_script(script)
    with pytest.raises(ConfigError):
        load_script(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    "kwargs", [{"tokens_per_s": 0}, {"first_token_ms": -1}, {"first_token_ms": float("nan")}]
)
def test_bad_pacing_is_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        PacedScriptModel(**kwargs)


def test_tokens_join_back_to_the_text() -> None:
    tokens = tokenize(DEFAULT_REPLY)
    assert "".join(tokens) == DEFAULT_REPLY
    assert 40 <= len(tokens) <= 60
    assert tokens[:3] == ["Thanks", " for", " waiting"]


class FaultyModel:
    """A reply backend with a bug: it fails after one delta."""

    async def stream(self, request: ConverseRequest) -> Any:
        yield "Hello"
        raise RuntimeError("bug in the backend")


def test_unexpected_backend_fault_is_an_internal_server_error() -> None:
    with serving(bedrock_app(llm_config(), FaultyModel())) as url:
        client = bedrock_client(url)
        with pytest.raises(client.exceptions.InternalServerException):
            client.converse(modelId=MODEL_ID, messages=[user("hi")])
        response = client.converse_stream(modelId=MODEL_ID, messages=[user("hi")])
        with pytest.raises(botocore.exceptions.EventStreamError) as streamed:
            stream_texts(response)
        assert streamed.value.response["Error"]["Code"] == "internalServerException"
