"""The whole local stack: emulator (SageMaker + the real Kokoro container, Bedrock with the paced
script model) and the agent, driven over HTTP like a browser or AgentCore would."""

import base64
import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.integration.conftest import LONG_PROMPT, assert_bidi_speaks_before_the_answer_is_complete, invoke
from tools.asr import transcribe, word_error_rate
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["bidi", "batch"])
def test_a_turn_streams_text_and_intelligible_audio(stack, mode):
    events = invoke(stack, {"prompt": "Where is my order?", "mode": mode})
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "error" not in kinds
    assert events[0]["mode"] == mode
    assert kinds.index("text_delta") < kinds.index("audio_stream_start") < kinds.index("audio_chunk")
    assert kinds.index("audio_stream_end") > max(i for i, k in enumerate(kinds) if k == "audio_chunk")
    times = [e["t_ms"] for e in events]
    assert times == sorted(times), "events come out in arrival order"
    chunks = [e for e in events if e["type"] == "audio_chunk"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    end = events[-1]
    assert end["ok"] is True and end["text"] == text
    if mode == "bidi":  # four sentences, the first cut at its comma (AGENT_FIRST_FRAGMENT_WORDS=3)
        assert end["sentences"] == 5
    else:
        assert end["sentences"] == 1
    pcm = b"".join(base64.b64decode(c["data"]) for c in chunks)
    assert len(pcm) / 48_000 == pytest.approx(end["audio_s"], abs=0.05)
    wer = word_error_rate(text, transcribe(pcm))
    assert wer <= 0.15, f"{mode}: WER {wer:.2f}"


def test_bidi_speaks_before_the_answer_is_complete(stack):
    events = invoke(stack, {"prompt": "Where is my order?", "mode": "bidi"})
    first_audio = next(e["t_ms"] for e in events if e["type"] == "audio_chunk")
    last_text = max(e["t_ms"] for e in events if e["type"] == "text_delta")
    sentences = {c["sentence"] for c in events if c["type"] == "audio_chunk"}
    assert sentences == set(range(events[-1]["sentences"])), "every chunk is spoken, in its own segment"
    assert first_audio < last_text + 2000, (
        "first sentence audio must not wait for the whole answer's synthesis"
    )


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"mode": "bidi"}, "missing_prompt"),
        ({"prompt": "Hi", "mode": "shout"}, "invalid_mode"),
        ({"prompt": "Hi", "format": "vorbis"}, "invalid_format"),
        (["not", "an", "object"], "invalid_payload"),
    ],
)
def test_bad_payloads_get_a_typed_error_event(stack, payload, code):
    events = invoke(stack, payload)
    assert [e["type"] for e in events] == ["error", "agent_end"]
    assert events[0]["code"] == code and events[1]["ok"] is False


@pytest.mark.parametrize("mode", ["batch", "bidi"])
def test_an_unknown_voice_is_reported_by_the_container_once_and_the_turn_ends(stack, mode):
    """Once a turn, though bidi sends each sentence on its own and the container refuses each."""
    events = invoke(stack, {"prompt": "Hi", "voice": "af_nobody", "mode": mode})
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["unknown_voice"], errors
    assert events[-1]["type"] == "agent_end" and events[-1]["ok"] is False
    if mode == "bidi":
        assert events[-1]["sentences"] > 1, "an answer of several sentences, each refused"


def test_compressed_audio_formats_pass_through(stack):
    events = invoke(stack, {"prompt": "Where is my order?", "mode": "batch", "format": "mp3"})
    mp3 = b"".join(base64.b64decode(e["data"]) for e in events if e["type"] == "audio_chunk")
    assert mp3[:3] == b"ID3" or mp3[0] == 0xFF
    assert len(mp3) < events[-1]["audio_s"] * 48_000 / 4


# slow: both modes of the long answer (18 s); bidi speaking before the answer is complete is
# test_bidi_speaks_before_the_answer_is_complete, and the demo command test_article_commands.py's.
@pytest.mark.slow
def test_demo_cli_compares_both_modes(stack):
    """bidi speaks while the answer is still being written, batch only once it is complete: behaviour,
    not a speed ratio (`python -m benchmarks agent` measures that). The long answer gives bidi seconds
    to speak before its end however slow the machine's synthesis is."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "deploy", "demo", "--endpoint-url", stack.agent_url),
            *("--prompt", LONG_PROMPT, "--runs", "1", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        check=True,
    )
    summary = json.loads(result.stdout)
    assert_bidi_speaks_before_the_answer_is_complete(summary)


def _open_sessions(stack) -> int:
    status = httpx.get(f"{stack.env['AWS_ENDPOINT_URL_SAGEMAKER']}/_emulator/status", timeout=5).json()
    return sum(r["sessions"] for ep in status["endpoints"] for r in ep["replicas"])


def test_a_client_that_goes_away_cancels_the_speech_it_no_longer_wants(stack):
    """Barge-in: the browser drops the stream after the first audio; the agent cancels what is queued
    and the container ends the session at once instead of computing the rest of the answer."""
    parser = SSEParser()
    with httpx.stream(
        "POST", f"{stack.agent_url}/invocations", json={"prompt": "Hi", "mode": "bidi"}, timeout=60
    ) as response:
        for raw in response.iter_raw():
            if any(e["type"] == "audio_chunk" for e in parser.feed(raw)):
                break
    deadline = time.monotonic() + 3.0  # the rest of the answer would take about 4 s to synthesize
    while _open_sessions(stack) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_sessions(stack) == 0, (
        "the abandoned session is still open: queued sentences were not cancelled"
    )
