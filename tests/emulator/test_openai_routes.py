"""OpenAI's own client (`openai`) against the emulator's `/v1` routes, in front of the real Kokoro
container: every response format decoded and understood by an independent ASR, the pcm stream read as
it arrives, the voices and models listed, OpenAI-shaped errors raised as the package's own types."""

from __future__ import annotations

import base64
import io
import json

import av
import httpx
import numpy as np
import openai
import pytest

from emulator.server import Emulator
from facts import SAMPLE_RATE
from tools.asr import transcribe, word_error_rate

pytestmark = [pytest.mark.integration, pytest.mark.asr]

# Two sentences, 16 words: Whisper on a Japanese voice speaking English mishears a name now and then (CI:
# "to Boston" as "Tabasthen", 2 of 8 words, WER 0.25), and the window plan, which follows the machine's
# speed, moves the seams between requests; over 16 words one such slip stays within 0.2.
TEXT = "The train to Boston leaves from platform nine. It stops twice on the way and arrives before noon."


def client_for(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="not-checked", max_retries=0, timeout=180)


@pytest.fixture(scope="module")
def client(kokoro_emulator: Emulator) -> openai.OpenAI:
    return client_for(f"{kokoro_emulator.http_url}/v1")


def pcm_of(data: bytes, fmt: str) -> bytes:
    """Mono s16le at 24 kHz, whatever the format (PyAV decodes and resamples)."""
    if fmt == "pcm":
        return data
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    with av.open(io.BytesIO(data)) as container:
        frames = [out for frame in container.decode(audio=0) for out in resampler.resample(frame)]
    return b"".join(np.asarray(frame.to_ndarray(), dtype="<i2").tobytes() for frame in frames)


def assert_heard(pcm: bytes, text: str = TEXT) -> None:
    heard = transcribe(pcm)
    assert word_error_rate(text, heard) <= 0.2, heard


@pytest.mark.parametrize("fmt", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
def test_every_response_format_is_spoken_and_understood(client: openai.OpenAI, fmt: str) -> None:
    response = client.audio.speech.create(model="tts-1", voice="jm_kumo", input=TEXT, response_format=fmt)
    pcm = pcm_of(response.content, fmt)
    assert len(pcm) > SAMPLE_RATE, f"{fmt}: under half a second of audio"
    assert_heard(pcm)


def test_streamed_pcm_arrives_in_parts_and_is_understood(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="kokoro-82m", voice="jm_kumo", input=TEXT, response_format="pcm"
    ) as response:
        assert response.headers["content-type"].startswith("audio/pcm")
        parts = list(response.iter_bytes())
    assert len(parts) > 1, "one body at the end is not a stream"
    assert_heard(b"".join(parts))


def test_sse_stream_format_has_openais_events(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="jm_kumo", input=TEXT, response_format="pcm", stream_format="sse"
    ) as response:
        events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "speech.audio.done" and set(kinds[:-1]) == {"speech.audio.delta"}
    assert events[-1]["usage"]["output_tokens"] == len(events) - 1
    assert_heard(b"".join(base64.b64decode(e["audio"]) for e in events[:-1]))


def test_a_blend_speaks(client: openai.OpenAI) -> None:
    response = client.audio.speech.create(
        model="tts-1", voice="jm_kumo(2)+jf_alpha(1)", input=TEXT, response_format="pcm"
    )
    assert_heard(response.content)


def test_voices_and_models_are_listed(client: openai.OpenAI) -> None:
    voices = client.get("/audio/voices", cast_to=object)
    assert "jm_kumo" in voices["voices"]
    assert {"id": "jm_kumo", "name": "jm_kumo", "language": "ja", "gender": "male"} in voices["data"]
    assert {m.id for m in client.models.list()} == {"kokoro-82m", "tts-1", "tts-1-hd"}


@pytest.mark.parametrize(
    ("fields", "code", "param"),
    [
        ({"voice": "af_nobody"}, "unknown_voice", "voice"),
        ({"voice": "jm_kumo+af_nobody"}, "unknown_voice", "voice"),
        ({"voice": "jm_kumo", "response_format": "vorbis"}, "unknown_format", "response_format"),
    ],
)
def test_bad_requests_are_openai_errors(client: openai.OpenAI, fields: dict, code: str, param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="tts-1", input=TEXT, **fields)
    assert caught.value.code == code
    assert caught.value.param == param


def test_an_unknown_model_is_openais_404(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.audio.speech.create(model="gpt-4o-mini-tts", voice="jm_kumo", input=TEXT)
    assert caught.value.code == "model_not_found"


def test_captions_name_the_words_as_written(kokoro_emulator: Emulator) -> None:
    written = "Dr. Smith paid $5 at 3pm."
    answer = httpx.post(
        f"{kokoro_emulator.http_url}/dev/captioned_speech",
        json={"model": "tts-1", "input": written, "voice": "jm_kumo", "response_format": "wav"},
        timeout=180,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["audio_format"] == "wav" and pcm_of(base64.b64decode(body["audio"]), "wav")
    words = body["timestamps"]
    assert [w["word"] for w in words] == written.split()
    starts = [w["start_time"] for w in words]
    assert starts == sorted(starts) and all(w["end_time"] > w["start_time"] for w in words)
