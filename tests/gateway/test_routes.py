"""`python -m gateway` run as on AWS (boto3's credential chain, SigV4, InvokeEndpoint and its response
stream), pointed at the emulator only by the variables that point any boto3 at it, and called with
OpenAI's own client: it speaks, streams, lists, and refuses the way OpenAI does."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import openai
import pytest

from emulator.processes import child, free_port
from emulator.server import Emulator
from facts import SAMPLE_RATE, TTS_ENDPOINT
from tests.support.paths import REPO
from tools.asr import transcribe, word_error_rate

pytestmark = [pytest.mark.integration, pytest.mark.asr]

TEXT = "Please hold on while I check that for you."


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


def test_streamed_pcm_through_the_response_stream_is_understood(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="jm_kumo", input=TEXT, response_format="pcm"
    ) as response:
        parts = list(response.iter_bytes())
    assert len(parts) > 1, "InvokeEndpointWithResponseStream's parts, passed on as they come"
    pcm = b"".join(parts)
    assert len(pcm) > SAMPLE_RATE
    heard = transcribe(pcm)
    assert word_error_rate(TEXT, heard) <= 0.2, heard


def test_mp3_by_the_endpoints_name(client: openai.OpenAI) -> None:
    response = client.audio.speech.create(model=TTS_ENDPOINT, voice="jf_alpha+jm_kumo", input=TEXT)
    assert response.response.headers["content-type"] == "audio/mpeg"
    assert response.content[:3] == b"ID3" or response.content[0] == 0xFF


def test_voices_and_models(client: openai.OpenAI) -> None:
    assert "jm_kumo" in client.get("/audio/voices", cast_to=object)["voices"]
    assert {m.id for m in client.models.list()} == {TTS_ENDPOINT, "tts-1", "tts-1-hd"}


def test_the_containers_refusal_comes_back_unwrapped(client: openai.OpenAI) -> None:
    """SageMaker's 424 ModelError carries the container's 400: the client sees OpenAI's 400."""
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="tts-1", voice="af_nobody", input=TEXT)
    assert (caught.value.code, caught.value.param) == ("unknown_voice", "voice")
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.speech.create(model="tts-1", voice="jm_kumo", input=TEXT, response_format="vorbis")
    assert caught.value.code == "unknown_format"


def test_an_unknown_model_is_a_404(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.audio.speech.create(model="elsewhere", voice="jm_kumo", input=TEXT)
    assert caught.value.code == "model_not_found"


def test_the_callers_credentials_sign_the_call(kokoro_emulator: Emulator) -> None:
    """With a wrong secret, SigV4 fails at the endpoint: an AWS refusal in OpenAI's envelope."""
    with (
        gateway({**kokoro_emulator.env, "AWS_SECRET_ACCESS_KEY": "wrong"}) as wrong,
        pytest.raises(openai.PermissionDeniedError) as caught,
    ):
        wrong.audio.speech.create(model="tts-1", voice="jm_kumo", input=TEXT)
    assert "Signature" in str(caught.value.code)
