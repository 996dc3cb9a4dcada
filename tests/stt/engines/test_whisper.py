"""Whisper's encoder sees the window an utterance needs, not faster-whisper's padded 30 s."""

from __future__ import annotations

import numpy as np
import pytest

from stt.config import STTConfig
from stt.engines.whisper import ENCODER_STEP_FRAMES, Transcriber, fitted_frames
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
