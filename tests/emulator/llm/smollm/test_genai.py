"""SmolLM2 on onnxruntime-genai: its answers are the torch path's, and its generator pool changes
nothing in them. The behaviour it shares with the torch path is tested on both in test_model.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from emulator.config import EmulatorConfig
from emulator.llm import reply_model_from_config
from emulator.llm.base import ConverseRequest, ReplyModelError
from emulator.llm.smollm.genai import POOL_SIZE, GenaiWorker, SmolLM2GenaiModel
from emulator.llm.smollm.model import SmolLM2Model

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]  # the first run builds the ONNX model

FRANCE = "What is the capital of France?"


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
    worker, tokenizer = genai.load()
    prefix = genai.system_prefix(tokenizer)
    idle = worker.call("idle")
    assert len(idle) == POOL_SIZE and len(prefix) > 40
    assert any(tokens[: len(prefix)] == prefix for tokens in idle)


def test_a_model_that_does_not_load_fails_every_call_with_its_reason(tmp_path) -> None:
    """The worker loads the model while the tokenizer loads in the emulator: its error arrives typed at
    the first call, and at the next (the worker stays, so no call finds it gone)."""
    worker = GenaiWorker(tmp_path, {"intra_op_num_threads": 1})
    for _ in range(2):
        with pytest.raises(ReplyModelError, match=f"onnxruntime-genai could not load {tmp_path}"):
            worker.call("preheat", [1, 2, 3])


def test_a_reused_generator_answers_as_a_fresh_one(genai: SmolLM2GenaiModel) -> None:
    """A request that rewinds an idle generator to the shared prefix gets the answer a new generator
    gives (a wrong rewind reads the new prompt after the old answer's tokens: another answer)."""
    question = FRANCE
    answer(genai, "Tell me about the weather in Lisbon.")
    reused = answer(genai, question)
    worker, _ = genai.load()
    worker.call("resize", 0)
    try:
        fresh = answer(genai, question)
    finally:
        worker.call("resize", POOL_SIZE)
    assert "Paris" in fresh and reused == fresh


@pytest.fixture(scope="module")
def float_model() -> SmolLM2Model:
    return SmolLM2Model()


# The first question in the default run (the one the builder's int8 got wrong); the longer two, 14 s
# of the float model's answers, in CI's `slow` phase.
@pytest.mark.parametrize(
    "question",
    [
        FRANCE,
        pytest.param("Give me three short tips for sleeping better tonight.", marks=pytest.mark.slow),
        pytest.param("Why is the sky blue?", marks=pytest.mark.slow),
    ],
)
def test_it_answers_as_the_float_model_does(
    genai: SmolLM2GenaiModel, float_model: SmolLM2Model, question: str
) -> None:
    """The GGUF's 4-bit blocks (gguf_blocks.py) are the float model's weights: greedy decoding gives
    torch's answers token for token (the builder's int8 answered the first question with London)."""
    assert answer(genai, question) == answer(float_model, question), question


def test_the_model_runs_beside_the_event_loop_not_on_it(genai: SmolLM2GenaiModel) -> None:
    """onnxruntime-genai keeps the GIL for a whole forward pass; in the worker process it cannot stop
    the server's event loop: a small piece of Python run all through an answer is never held up for
    anything like a prompt pass (95 ms in-process)."""
    worst = 0.0
    thread = threading.Thread(
        target=answer, args=(genai, "Tell me a long story about a dragon who learns to cook.")
    )
    thread.start()
    while thread.is_alive():
        began = time.perf_counter()
        sum(range(2000))
        worst = max(worst, time.perf_counter() - began)
    thread.join()
    assert worst < 0.03, f"a 20 us piece of Python waited {worst * 1000:.0f} ms"


def test_a_worker_that_dies_is_a_typed_error_not_a_hang(tmp_path) -> None:
    model = SmolLM2GenaiModel()
    worker, _ = model.load()
    worker._process.kill()
    worker._process.join(10)
    with pytest.raises(ReplyModelError, match="worker process has gone"):
        answer(model, FRANCE)


def test_the_session_options_carry_the_thread_budget(tmp_path) -> None:
    model = reply_model_from_config(
        EmulatorConfig(llm_cache_dir=tmp_path, llm_backend="smollm2-onnx", llm_threads=0)
    )
    assert isinstance(model, SmolLM2GenaiModel)
    assert model.session_options()["intra_op_num_threads"] == model.threads >= 1
