"""The Whisper engine: the encoder sees the window an utterance needs, not faster-whisper's padded 30 s;
and where it runs (`STT_DEVICE`): the GPU image asks for `cuda`, and a container without a GPU must say so
at load, in its own words, instead of CTranslate2's "CUDA driver version is insufficient"."""

from __future__ import annotations

import asyncio
from pathlib import Path

import ctranslate2
import numpy as np
import pytest

from stt.config import STTConfig
from stt.engines.whisper import ENCODER_STEP_FRAMES, Transcriber, choose_device, fitted_frames
from stt.serving.model_host import ModelHost
from tests.support.stt_container import NO_GPU
from tools.asr import word_error_rate
from tools.speech_samples import recordings


def padded(content: int, total: int = 3000, batch: bool = False) -> np.ndarray:
    """Log-mel-like features: `content` frames of speech, then faster-whisper's all-zero padding."""
    features = np.zeros((80, total), np.float32)
    features[:, :content] = np.random.default_rng(1).uniform(-0.9, 1.2, (80, content))
    return features[None] if batch else features


@pytest.mark.parametrize(
    ("content", "window"),
    [(1, 1000), (350, 1000), (1000, 1000), (1001, 2000), (2999, 3000), (3000, 3000)],
)
def test_the_window_is_the_content_in_whole_steps(content: int, window: int):
    assert fitted_frames(padded(content)) == window
    assert fitted_frames(padded(content, batch=True)) == window


def test_a_column_of_silence_inside_the_speech_is_content():
    features = padded(1500)
    features[:, 1200:1400] = -0.25  # digital silence after Whisper's normalisation, not padding
    assert fitted_frames(features) == 2000


def test_silence_alone_gets_the_least_window_and_a_short_input_is_not_padded():
    assert fitted_frames(np.zeros((80, 3000), np.float32)) == ENCODER_STEP_FRAMES
    assert fitted_frames(padded(300, total=600)) == 600


@pytest.mark.asr
def test_a_recording_is_heard_through_a_ten_second_window(monkeypatch):
    """The real model on held-out speech: the encoder is given 1,000 frames for a 3.4 s utterance and
    the words are what the reader said."""
    from faster_whisper import WhisperModel

    widths: list[int] = []
    encode = WhisperModel.encode

    def spy(self, features):
        widths.append(features.shape[-1])
        return encode(self, features)

    monkeypatch.setattr(WhisperModel, "encode", spy)
    transcriber = Transcriber(STTConfig(threads=2))
    clip = recordings()[2]
    samples = np.frombuffer(clip.pcm(), "<i2").astype(np.float32) / 32768
    transcript = transcriber.transcribe(samples, words=True)
    assert widths and set(widths) == {ENCODER_STEP_FRAMES}
    assert word_error_rate(clip.text, transcript.text) <= 0.1, transcript.text
    assert transcript.words[-1].end_ms <= len(samples) / 16


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
