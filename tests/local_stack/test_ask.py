"""One question to a WAV file: the answer's audio as written, an error event as an error."""

from __future__ import annotations

import base64
import wave
from pathlib import Path

import pytest

from local_stack import ask
from tts.wire.sse import encode_event


def test_the_answer_is_written_as_a_wav_file_of_its_length(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pcm = bytes(range(256)) * 30
    events = [
        {"type": "agent_start"},
        {"type": "text_delta", "text": "Hello "},
        {"type": "audio_chunk", "seq": 0, "data": base64.b64encode(pcm[:4000]).decode()},
        {"type": "text_delta", "text": "there."},
        {"type": "audio_chunk", "seq": 1, "data": base64.b64encode(pcm[4000:]).decode()},
        {"type": "agent_end"},
    ]
    monkeypatch.setattr(ask, "turn_chunks", lambda *_: iter([b"".join(encode_event(e) for e in events)]))
    text, seconds = ask.speak_to_wav("http://agent", "hi", tmp_path / "out" / "answer.wav")
    assert text == "Hello there." and seconds == pytest.approx(len(pcm) / 2 / 24_000)
    with wave.open(str(tmp_path / "out" / "answer.wav")) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 24_000)
        assert wav.getnframes() == len(pcm) // 2 and wav.readframes(wav.getnframes()) == pcm


def test_an_error_event_fails_the_question(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    error = encode_event({"type": "error", "code": "tts_unavailable", "message": "no endpoint"})
    monkeypatch.setattr(ask, "turn_chunks", lambda *_: iter([error]))
    with pytest.raises(RuntimeError, match="tts_unavailable: no endpoint"):
        ask.speak_to_wav("http://agent", "hi", tmp_path / "answer.wav")
    assert not (tmp_path / "answer.wav").exists()
