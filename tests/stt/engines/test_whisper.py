"""Where Whisper runs (`STT_DEVICE`): the GPU image asks for `cuda`, and a container without a GPU must say
so at load, in its own words, instead of CTranslate2's "CUDA driver version is insufficient"."""

from __future__ import annotations

import asyncio
from pathlib import Path

import ctranslate2
import pytest

from stt.config import STTConfig
from stt.engines.whisper import Transcriber, choose_device
from stt.serving.model_host import ModelHost
from tests.support.stt_container import NO_GPU


def test_auto_takes_the_gpu_ctranslate2_sees_and_cuda_requires_one():
    assert choose_device("auto", cuda_devices=1) == "cuda"
    assert choose_device("auto", cuda_devices=0) == "cpu"
    assert choose_device("cpu", cuda_devices=1) == "cpu"
    assert choose_device("cuda", cuda_devices=2) == "cuda"
    with pytest.raises(RuntimeError, match=NO_GPU):
        choose_device("cuda", cuda_devices=0)


@pytest.mark.skipif(ctranslate2.get_cuda_device_count() > 0, reason="this machine has a GPU")
def test_without_a_gpu_cuda_fails_at_load_and_ping_says_why(tmp_path: Path):
    config = STTConfig(model_dir=tmp_path, device="cuda")
    with pytest.raises(RuntimeError, match=NO_GPU):
        Transcriber(config)
    host = ModelHost(config)
    asyncio.run(host.load())
    assert not host.ready.is_set()
    assert host.load_error is not None and NO_GPU in host.load_error  # what /ping's 503 carries
