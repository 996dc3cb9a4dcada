"""The engine on an NVIDIA GPU through onnxruntime-gpu (run with `tox -e gpu` on a GPU machine)."""

import numpy as np
import onnxruntime as ort
import pytest

from tts.config import SAMPLE_RATE, TTSConfig
from tts.engine import KokoroEngine

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        "CUDAExecutionProvider" not in ort.get_available_providers(),
        reason="no CUDAExecutionProvider: onnxruntime-gpu and an NVIDIA GPU are needed",
    ),
]

TEXT = "It shipped yesterday from our Denver warehouse and should arrive on Thursday."


def test_cuda_engine_matches_the_cpu_engine():
    gpu = KokoroEngine(TTSConfig.from_env(provider="cuda"))
    cpu = KokoroEngine(TTSConfig.from_env(provider="cpu"))
    assert gpu.provider == "CUDAExecutionProvider"
    (tokens,) = gpu.segments(TEXT, "en-us")
    on_gpu = gpu.synthesize(tokens, "jm_kumo", 1.0)
    on_cpu = cpu.synthesize(tokens, "jm_kumo", 1.0)
    assert abs(len(on_gpu) - len(on_cpu)) <= SAMPLE_RATE // 10
    n = min(len(on_gpu), len(on_cpu))
    correlation = np.corrcoef(on_gpu[:n], on_cpu[:n])[0, 1]
    assert correlation > 0.8, f"GPU audio differs from CPU audio (correlation {correlation:.2f})"
