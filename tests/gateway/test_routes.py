"""`python -m gateway` run as on AWS (boto3's credential chain, SigV4, InvokeEndpoint and its response
stream), pointed at the emulator only by the variables that point any boto3 at it, in front of the real
Kokoro container, and called with OpenAI's own client: every response format decoded and understood by
an independent ASR, the pcm stream read as it arrives, SSE events, blends, voices, models and captions;
OpenAI-shaped errors raised as the package's own types; a client that hangs up frees the endpoint."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import sys
import time
from collections.abc import Iterator

import av
import httpx
import numpy as np
import openai
import pytest

from emulator.processes import child, free_port
from emulator.server import Emulator
from facts import SAMPLE_RATE, TTS_ENDPOINT
from tests.support.paths import REPO
from tools.asr import transcribe, word_error_rate

pytestmark = [pytest.mark.integration, pytest.mark.asr]

# Two sentences, 16 words: Whisper on a Japanese voice speaking English mishears a name now and then (CI:
# "to Boston" as "Tabasthen", 2 of 8 words, WER 0.25), and the window plan, which follows the machine's
# speed, moves the seams between requests; over 16 words one such slip stays within 0.2.
TEXT = "The train to Boston leaves from platform nine. It stops twice on the way and arrives before noon."


@contextlib.contextmanager
def gateway(env: dict[str, str]) -> Iterator[openai.OpenAI]:
    port = free_port()
    argv = [sys.executable, "-m", "gateway", "--endpoint-name", TTS_ENDPOINT, "--port", str(port)]
    argv += ["--log-level", "warning"]
    with child(argv, env=env, ready_url=f"http://127.0.0.1:{port}/v1/models", cwd=REPO):
        yield openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=180
        )


@pytest.fixture(scope="module")
def client(kokoro_emulator: Emulator) -> Iterator[openai.OpenAI]:
    """The emulator checks SigV4 (tests/conftest.py): the gateway's calls are signed with its keys."""
    with gateway(kokoro_emulator.env) as running:
        yield running


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


def test_streamed_pcm_through_the_response_stream_arrives_in_parts(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model=TTS_ENDPOINT, voice="jm_kumo", input=TEXT, response_format="pcm"
    ) as response:
        assert response.headers["content-type"].startswith("audio/pcm")
        parts = list(response.iter_bytes())
    assert len(parts) > 1, "InvokeEndpointWithResponseStream's parts, passed on as they come"
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


def test_a_blend_by_the_endpoints_name_speaks(client: openai.OpenAI) -> None:
    response = client.audio.speech.create(
        model=TTS_ENDPOINT, voice="jm_kumo(2)+jf_alpha(1)", input=TEXT, response_format="pcm"
    )
    assert response.response.headers["content-type"].startswith("audio/pcm")
    assert_heard(response.content)


def test_voices_and_models_are_listed(client: openai.OpenAI) -> None:
    voices = client.get("/audio/voices", cast_to=object)
    assert "jm_kumo" in voices["voices"]
    assert {"id": "jm_kumo", "name": "jm_kumo", "language": "ja", "gender": "male"} in voices["data"]
    assert {m.id for m in client.models.list()} == {TTS_ENDPOINT, "tts-1", "tts-1-hd"}


@pytest.mark.parametrize(
    ("fields", "code", "param"),
    [
        ({"voice": "af_nobody"}, "unknown_voice", "voice"),
        ({"voice": "jm_kumo+af_nobody"}, "unknown_voice", "voice"),
        ({"voice": "jm_kumo", "response_format": "vorbis"}, "unknown_format", "response_format"),
    ],
)
def test_the_containers_refusal_comes_back_unwrapped(
    client: openai.OpenAI, fields: dict, code: str, param: str
) -> None:
    """SageMaker's 424 ModelError carries the container's 400: the client sees OpenAI's 400."""
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="tts-1", input=TEXT, **fields)
    assert (caught.value.code, caught.value.param) == (code, param)


def test_an_unknown_model_is_openais_404(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.audio.speech.create(model="gpt-4o-mini-tts", voice="jm_kumo", input=TEXT)
    assert caught.value.code == "model_not_found"


def test_captions_name_the_words_as_written(client: openai.OpenAI) -> None:
    written = "Dr. Smith paid $5 at 3pm."
    answer = httpx.post(
        str(client.base_url).replace("/v1/", "/dev/captioned_speech"),
        json={"model": "tts-1", "input": written, "voice": "jm_kumo", "response_format": "wav"},
        timeout=180,
        trust_env=False,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["audio_format"] == "wav" and pcm_of(base64.b64decode(body["audio"]), "wav")
    words = body["timestamps"]
    assert [w["word"] for w in words] == written.split()
    starts = [w["start_time"] for w in words]
    assert starts == sorted(starts) and all(w["end_time"] > w["start_time"] for w in words)


def test_the_callers_credentials_sign_the_call(kokoro_emulator: Emulator) -> None:
    """With a wrong secret, SigV4 fails at the endpoint: an AWS refusal in OpenAI's envelope."""
    with (
        gateway({**kokoro_emulator.env, "AWS_SECRET_ACCESS_KEY": "wrong"}) as wrong,
        pytest.raises(openai.PermissionDeniedError) as caught,
    ):
        wrong.audio.speech.create(model="tts-1", voice="jm_kumo", input=TEXT)
    assert "Signature" in str(caught.value.code)


def _sessions(emulator: Emulator) -> tuple[int, int]:
    """The emulator's invocations open on the replica, and the sessions its container says it plays
    (its `/ping` load, through the operator's status)."""
    status = httpx.get(f"{emulator.http_url}/_emulator/status", timeout=5, trust_env=False).json()
    [replica] = [r for ep in status["endpoints"] for r in ep["replicas"]]
    return replica["sessions"], (replica["load"] or {}).get("sessions", 0)


def test_a_client_that_hangs_up_mid_stream_frees_the_endpoint(
    client: openai.OpenAI, kokoro_emulator: Emulator
) -> None:
    """A long answer abandoned after its first audio: the gateway closes boto3's response stream, so the
    emulator ends the invocation and the container its session. Before (#49), nothing closed it
    (Starlette stops iterating a body whose client left): the container kept synthesizing the whole
    text, its one slot (TTS_CAPACITY=1) stayed taken, and the next client got a 424 after 60 s."""
    long = " ".join([TEXT] * 20)
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="jm_kumo", input=long, response_format="pcm"
    ) as response:
        # Held while the status is read: an iterator dropped after its first chunk closes the connection
        # (httpx closes a stream whose iterator is finalized), a hang-up before the status is asked.
        audio = response.iter_bytes(4800)
        assert next(audio)
        assert _sessions(kokoro_emulator) == (1, 1)
    deadline = time.monotonic() + 15
    while _sessions(kokoro_emulator) != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sessions(kokoro_emulator) == (0, 0)
    started = time.monotonic()
    second = client.audio.speech.create(model="tts-1", voice="jm_kumo", input=TEXT, response_format="pcm")
    assert len(second.content) > SAMPLE_RATE and time.monotonic() - started < 30
