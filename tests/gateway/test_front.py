"""gateway/front.py: what the gateway refuses before a container sees the body, in OpenAI's envelope."""

from __future__ import annotations

import json

import pytest

from gateway.front import (
    OpenAIRefusal,
    captioned_request,
    endpoint_for,
    model_list,
    speech_body,
)


def test_openais_names_mean_the_only_endpoint_and_an_endpoint_names_itself():
    assert endpoint_for("tts-1", ["kokoro-82m"]) == "kokoro-82m"
    assert endpoint_for("tts-1-hd", ["kokoro-82m"]) == "kokoro-82m"
    assert endpoint_for("b", ["a", "b"]) == "b"
    with pytest.raises(OpenAIRefusal) as refused:
        endpoint_for("tts-1", ["a", "b"])  # two endpoints: OpenAI's name is ambiguous
    assert (refused.value.status, refused.value.code, refused.value.param) == (
        404,
        "model_not_found",
        "model",
    )
    assert "the endpoints are a, b" in refused.value.message
    with pytest.raises(OpenAIRefusal, match="no endpoint is in service"):
        endpoint_for("kokoro-82m", [])


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b"{", 400, "invalid_json"),
        (b"[1]", 400, "not_an_object"),
        (b'{"voice": "af"}', 400, "missing_text"),
        (b"[" * 100_000, 400, "invalid_json"),  # too deep for json: refused, not a crash
    ],
)
def test_bodies_that_cannot_be_speech_are_refused_in_openais_envelope(raw: bytes, status: int, code: str):
    with pytest.raises(OpenAIRefusal) as refused:
        speech_body(raw)
    error = json.loads(refused.value.body())["error"]
    assert refused.value.status == status and error["code"] == code
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")
    assert set(error) == {"message", "type", "param", "code"}


def test_a_speech_body_passes_and_captions_ask_for_timestamps():
    body = speech_body(b'{"model": "tts-1", "input": "Hi.", "voice": "af_bella"}')
    assert body["input"] == "Hi."
    assert json.loads(captioned_request(body)) == {**body, "return_timestamps": True}


def test_the_model_list_names_openais_models_only_for_a_single_endpoint():
    assert [m["id"] for m in model_list(["k"], "x")["data"]] == ["k", "tts-1", "tts-1-hd"]
    assert [m["id"] for m in model_list(["a", "b"], "x")["data"]] == ["a", "b"]
