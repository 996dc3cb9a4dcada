"""The agent's wire rules: splitting endpoint chunks into audio and control, and payload validation."""

import json

import numpy as np
import pytest

from agent.app import PayloadError, parse_turn
from agent.config import AgentConfig
from agent.sagemaker_client import CABundleError, MissingCredentials, bidirectional_client, check_ca_bundle
from agent.tts_session import Audio, Control, classify

CONFIG = AgentConfig()


def test_a_json_object_chunk_is_control():
    chunk = json.dumps({"type": "synthesis_complete", "request_id": "s0", "duration_s": 1.2}).encode()
    assert classify(chunk) == Control({"type": "synthesis_complete", "request_id": "s0", "duration_s": 1.2})


def test_pcm_that_starts_with_an_open_brace_is_still_audio():
    samples = np.array([0x227B, -1200, 3000, 0x7B7B] * 1200, dtype="<i2")  # 0x7b '{' first byte
    chunk = samples.tobytes()
    assert chunk[:1] == b"{"
    assert classify(chunk) == Audio(chunk)


@pytest.mark.parametrize(
    "chunk", [b"{", b'{"type": "x"', b"{\xff\xfe}", b"[1, 2]", b'"text"', b"", b"\x00\x01"]
)
def test_anything_that_is_not_a_whole_json_object_is_audio(chunk):
    assert isinstance(classify(chunk), Audio)


def test_a_valid_payload_becomes_a_turn_with_defaults():
    turn = parse_turn({"prompt": "Hi"}, CONFIG)
    assert (turn.prompt, turn.mode, turn.voice, turn.audio_format) == ("Hi", "bidi", "jm_kumo", "pcm")
    turn = parse_turn({"prompt": "Hi", "mode": "batch", "voice": "jf_nezumi", "format": "mp3"}, CONFIG)
    assert (turn.mode, turn.voice, turn.audio_format) == ("batch", "jf_nezumi", "mp3")


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ([], "invalid_payload"),
        ("hi", "invalid_payload"),
        ({}, "missing_prompt"),
        ({"prompt": "  "}, "missing_prompt"),
        ({"prompt": 3}, "invalid_prompt"),
        ({"prompt": ["Hi"]}, "invalid_prompt"),
        ({"prompt": "Hi", "mode": ["bidi"]}, "invalid_mode"),
        ({"prompt": "Hi", "mode": {}}, "invalid_mode"),
        ({"prompt": "Hi", "voice": 3}, "invalid_voice"),
        ({"prompt": "Hi", "format": ["pcm"]}, "invalid_format"),
        ({"prompt": "x" * 4001}, "prompt_too_long"),
        ({"prompt": "Hi", "mode": "stream"}, "invalid_mode"),
        ({"prompt": "Hi", "voice": ""}, "invalid_voice"),
        ({"prompt": "Hi", "format": "flac"}, "invalid_format"),
    ],
)
def test_bad_payloads_are_typed_errors(payload, code):
    with pytest.raises(PayloadError) as caught:
        parse_turn(payload, CONFIG)
    assert caught.value.code == code


def test_config_reads_the_emulator_variables(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", "https://localhost:8443")
    monkeypatch.setenv("AWS_CA_BUNDLE", "/tmp/ca.pem")
    config = AgentConfig.from_env()
    assert config.sagemaker_endpoint_uri == "https://localhost:8443"
    assert (config.region, config.ca_bundle) == ("eu-west-1", "/tmp/ca.pem")
    monkeypatch.delenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2")
    assert (
        AgentConfig.from_env().sagemaker_endpoint_uri
        == "https://runtime.sagemaker.eu-west-1.amazonaws.com:8443"
    )


async def test_missing_credentials_fail_fast_with_a_typed_error(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(MissingCredentials):
        await bidirectional_client(AgentConfig())


def test_an_unreadable_ca_bundle_is_rejected_up_front(tmp_path):
    with pytest.raises(CABundleError, match="does not exist"):
        check_ca_bundle(str(tmp_path / "missing.pem"))
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(CABundleError, match="not a PEM"):
        check_ca_bundle(str(bogus))
