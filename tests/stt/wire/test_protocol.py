"""Clips and control messages parsed into samples and typed messages, or refused with a stable code."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from stt.wire import protocol
from stt.wire.protocol import End, ProtocolError, Start, looks_like_control, parse_clip, parse_control


def wav(pcm: bytes, rate: int = 16_000, channels: int = 1, width: int = 2) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


PCM = np.array([0, 16384, -16384, 32767], dtype="<i2").tobytes()


def code(call) -> str:
    with pytest.raises(ProtocolError) as error:
        call()
    return error.value.code


def test_a_wav_and_raw_pcm_give_the_same_samples():
    from_wav = parse_clip(wav(PCM), "audio/wav", 10)
    from_pcm = parse_clip(PCM, "audio/pcm;rate=16000;channels=1", 10)
    assert np.array_equal(from_wav, from_pcm)
    assert from_pcm.tolist() == [0.0, 0.5, -0.5, 32767 / 32768]


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (wav(PCM, rate=24_000), "audio/wav", "unsupported_sample_rate"),
        (wav(PCM, channels=2), "audio/wav", "unsupported_channels"),
        (wav(b"\x00\x01", width=1), "audio/wav", "unsupported_sample_format"),
        (b"RIFF not a wav", "audio/wav", "invalid_wav"),
        (PCM, "audio/pcm;rate=8000", "unsupported_sample_rate"),
        (PCM, "audio/pcm;rate=fast", "invalid_field"),
        (PCM, "audio/pcm;channels=2", "unsupported_channels"),
        (PCM[:-1], "audio/pcm", "invalid_pcm"),
        (b"", "audio/pcm", "empty_audio"),
        (wav(b""), "audio/wav", "empty_audio"),
        (PCM, "application/json", "unsupported_media_type"),
        (b"\x00" * 32_000 * 3, "audio/pcm", "audio_too_long"),
    ],
)
def test_bad_clips_are_refused_by_name(body: bytes, content_type: str, expected: str):
    assert code(lambda: parse_clip(body, content_type, max_seconds=2)) == expected


def test_control_messages():
    assert parse_control('{"type": "end"}') == End()
    assert parse_control(b'{"type": "start", "sample_rate": 16000}') == Start(16000)
    assert code(lambda: parse_control('{"type": "start", "sample_rate": 44100}')) == "unsupported_sample_rate"
    assert code(lambda: parse_control('{"type": "start", "format": "f32le"}')) == "unsupported_sample_format"
    assert code(lambda: parse_control('{"type": "start", "channels": 2}')) == "unsupported_channels"
    assert code(lambda: parse_control('{"type": "speak"}')) == "unknown_type"
    assert code(lambda: parse_control("not json")) == "invalid_json"
    assert code(lambda: parse_control("[1]")) == "not_an_object"
    assert code(lambda: parse_control(b"\xff")) == "invalid_utf8"


def test_only_a_json_object_with_a_type_is_read_as_control_from_binary():
    assert looks_like_control(b'{"type": "end"}')
    assert not looks_like_control(b'{"x": 1}')
    assert not looks_like_control(b'{"type": "end"' + b"\x00" * 8)
    assert not looks_like_control(PCM)


def test_a_pause_says_what_was_heard_and_how_finished_it_is():
    assert protocol.pause(2, "Why is the sky", 0.12345, False, False) == {
        "type": "pause",
        "utterance": 2,
        "text": "Why is the sky",
        "complete": 0.123,
        "reads_finished": False,
        "ends": False,
    }
    assert protocol.pause(1, "Hi.", None, True, False)["complete"] is None  # the turn model off
    assert protocol.speech_resumed(3) == {"type": "speech_resumed", "utterance": 3}
