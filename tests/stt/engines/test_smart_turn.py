"""Smart Turn v3.2 (stt/engines/smart_turn.py) on onnxruntime, from its graph taken out of the
pipecat-ai wheel and pinned by SHA-256 (stt/engines/weights.py): what it hears as finished, and the
window of audio it reads."""

from __future__ import annotations

import functools
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.engines.smart_turn import WINDOW_SAMPLES, SmartTurn
from stt.engines.weights import SMART_TURN_SHA256, smart_turn_onnx
from tools import spoken


@functools.cache
def model() -> SmartTurn:
    return SmartTurn(smart_turn_onnx(STTConfig().cache_dir))


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768


def test_a_finished_question_sounds_finished_and_a_trailing_um_does_not():
    finished = samples(spoken.kokoro("What is the capital of France?", "jm_kumo") + spoken.silence(0.2))
    holding = samples(spoken.kokoro("I want to, um", "jm_kumo") + spoken.silence(0.2))
    assert model().complete(finished) >= 0.5 > 0.1 >= model().complete(holding)


def test_it_reads_the_last_8_s_zero_padded_in_front():
    rng = np.random.default_rng(0)
    tail = rng.normal(0, 0.1, WINDOW_SAMPLES).astype(np.float32)
    longer = np.concatenate([rng.normal(0, 0.1, STT_SAMPLE_RATE).astype(np.float32), tail])
    assert np.array_equal(model().features(longer), model().features(tail))
    short = model().features(tail[-STT_SAMPLE_RATE:])
    assert short.shape == (80, 800) and np.allclose(short[:, :690], short[:, :1])  # the padding is flat


def test_a_cached_graph_that_is_not_the_pinned_one_is_fetched_again(tmp_path: Path):
    cached = tmp_path / "smart-turn-v3.2-cpu.onnx"
    shutil.copyfile(smart_turn_onnx(STTConfig().cache_dir), cached)
    with cached.open("r+b") as graph:
        graph.seek(1000)
        graph.write(b"\x00\x01\x02")
    assert hashlib.sha256(smart_turn_onnx(tmp_path).read_bytes()).hexdigest() == SMART_TURN_SHA256


def test_the_graph_is_the_pinned_one():
    path = smart_turn_onnx(STTConfig().cache_dir)
    if hashlib.sha256(path.read_bytes()).hexdigest() != SMART_TURN_SHA256:
        pytest.fail(f"{path} is not Smart Turn v3.2's graph")
