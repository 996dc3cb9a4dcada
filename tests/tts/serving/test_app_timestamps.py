"""`"timestamps": true` on the real container, both engines (torch on the CPU here), both transports:
each segment's `words` frame names the words as written, comes before the audio it describes, and its
times match the audio: silence before the first word and after the last, in order, at any speed. A
request without it sees no `words` frame."""

from __future__ import annotations

import base64
import json

import httpx
import numpy as np
import pytest

from tools.tts_client import Transcript, connect, is_control, read_until
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

MARKDOWN = "It is **very** important: fix bug #42 today! 🎉 See [the guide](https://example.com/guide)."
WRITTEN_WORDS = [
    "It",
    "is",
    "**very**",
    "important:",
    "fix",
    "bug",
    "#42",
    "today!",
    "See",
    "[the",
    "guide](https://example.com/guide).",
]
SILENT_RMS = 0.01  # -40 dBFS


@pytest.fixture(params=["onnx", "torch"])
def server(request):
    return request.getfixturevalue("tts_server" if request.param == "onnx" else "torch_tts_server")


def rms(pcm: bytes, start_ms: float, stop_ms: float) -> float:
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    piece = audio[int(start_ms * 24) : int(stop_ms * 24)]
    return float(np.sqrt(np.mean(piece**2))) if len(piece) else 0.0


def check_words(words: list[dict], pcm: bytes, speed: float = 1.0) -> None:
    """In order, not overlapping, within the audio; the audio is silent before the first word and after
    the last one, and sounds inside each word (spoken at `speed`)."""
    audio_ms = len(pcm) / 48
    previous_end = 0.0
    for word in words:
        assert previous_end <= word["start_ms"] < word["end_ms"], word
        assert rms(pcm, word["start_ms"], word["end_ms"]) > SILENT_RMS, word
        previous_end = word["end_ms"]
    assert previous_end <= audio_ms
    # A word's first phoneme starts on a 25 ms frame, and its sound may rise a little before: over the
    # predictor's frames, which a slower speed stretches. At 0.8 the first word's sound rose 100-150 ms
    # before its start (RMS 0.002-0.011 from 0 to start - 100 ms, 0.001-0.005 to start - 125, in 12
    # runs: the windows' places move it), so the margin is 100 ms at speed 1, longer as it is slower.
    margin_ms = 100 / min(speed, 1.0)
    before, after = words[0]["start_ms"] - margin_ms, words[-1]["end_ms"] + margin_ms
    assert rms(pcm, 0, before) < SILENT_RMS, ("the first word starts with the speech", speed)
    assert rms(pcm, after, audio_ms) < SILENT_RMS, ("the last word ends with the speech", speed)


async def speak_on_websocket(server, messages: list[dict]) -> Transcript:
    transcript = Transcript()
    async with connect(server.ws) as ws:
        for message in messages:
            await ws.send(json.dumps(message))
        for message in messages:
            await read_until(ws, transcript, is_control("synthesis_complete", message["request_id"]))
    return transcript


def audio_of(transcript: Transcript, request_id: str) -> tuple[list[dict], bytes]:
    """The request's words frames and its PCM; each words frame must come before the audio it describes:
    the audio received before it ends no later than its first word starts."""
    start = next(f for f in transcript.controls("synthesis_start") if f["request_id"] == request_id)
    pcm, frames = b"", []
    for frame in transcript.frames[transcript.frames.index(start) + 1 :]:
        if isinstance(frame, bytes):
            pcm += frame
        elif frame["type"] == "words":
            assert frame["request_id"] == request_id
            assert len(pcm) / 48 <= frame["words"][0]["start_ms"], "words before their audio"
            frames.append(frame)
        elif frame["type"] in ("synthesis_complete", "synthesis_start"):
            break
    return frames, pcm


async def test_websocket_words_as_written_before_their_audio_and_none_unasked(server):
    transcript = await speak_on_websocket(
        server,
        [
            {"text": MARKDOWN, "timestamps": True, "request_id": "timed"},
            {"text": MARKDOWN, "request_id": "plain"},
        ],
    )
    frames, pcm = audio_of(transcript, "timed")
    complete = next(f for f in transcript.controls("synthesis_complete") if f["request_id"] == "timed")
    assert len(frames) == complete["segments"] == 1
    words = frames[0]["words"]
    assert [w["text"] for w in words] == WRITTEN_WORDS
    check_words(words, pcm)
    assert not [f for f in transcript.controls("words") if f["request_id"] == "plain"]
    assert len(transcript.controls("words")) == 1


async def test_websocket_speeds_scale_the_times_with_the_audio(tts_server):
    speeds = {"slow": 0.8, "normal": 1.0, "fast": 1.3}
    transcript = await speak_on_websocket(
        tts_server,
        [{"text": MARKDOWN, "timestamps": True, "speed": s, "request_id": rid} for rid, s in speeds.items()],
    )
    ends = {}
    for rid in speeds:
        (frame,), pcm = audio_of(transcript, rid)
        check_words(frame["words"], pcm, speeds[rid])
        ends[rid] = frame["words"][-1]["end_ms"]
    assert ends["slow"] > ends["normal"] > ends["fast"]
    assert ends["slow"] / ends["normal"] == pytest.approx(1 / 0.8, rel=0.15)
    assert ends["fast"] / ends["normal"] == pytest.approx(1 / 1.3, rel=0.15)


async def test_websocket_segment_words_continue_after_the_earlier_segments_audio(tts_server):
    """Over 510 phoneme tokens: two segments, each with its own words frame, times from the request's
    first audio sample."""
    text = " ".join(
        f"Sentence {n} of a long answer keeps going, so that the whole reply needs two segments."
        for n in range(7)
    )
    transcript = await speak_on_websocket(
        tts_server, [{"text": text, "timestamps": True, "request_id": "long"}]
    )
    frames, pcm = audio_of(transcript, "long")
    assert len(frames) >= 2
    words = [w for frame in frames for w in frame["words"]]
    assert [w["text"] for w in words] == text.split()
    check_words(words, pcm)


async def test_sse_words_events_come_before_their_audio_chunks(server):
    body = {"text": MARKDOWN, "transport": "sse", "timestamps": True, "request_id": "sse"}
    async with httpx.AsyncClient(timeout=120) as client:
        response = await client.post(f"{server.http}/invocations", json=body)
    assert response.status_code == 200
    events = SSEParser().feed(response.content)
    kinds = [event["type"] for event in events]
    assert kinds[:3] == ["audio_stream_start", "words", "audio_chunk"] and kinds[-1] == "audio_stream_end"
    assert kinds.count("words") == 1
    (words_event,) = [event for event in events if event["type"] == "words"]
    assert words_event["request_id"] == "sse"
    assert [w["text"] for w in words_event["words"]] == WRITTEN_WORDS
    pcm = b"".join(base64.b64decode(e["data"]) for e in events if e["type"] == "audio_chunk")
    check_words(words_event["words"], pcm)


async def test_sse_without_timestamps_has_no_words_and_binary_refuses_them(tts_server):
    async with httpx.AsyncClient(timeout=120) as client:
        plain = await client.post(
            f"{tts_server.http}/invocations", json={"text": "Hello.", "transport": "sse"}
        )
        binary = await client.post(
            f"{tts_server.http}/invocations", json={"text": "Hello.", "timestamps": True}
        )
        wrong = await client.post(f"{tts_server.http}/invocations", json={"text": "Hi.", "timestamps": "yes"})
    assert "words" not in [event["type"] for event in SSEParser().feed(plain.content)]
    assert binary.status_code == wrong.status_code == 400
    assert binary.json()["code"] == wrong.json()["code"] == "invalid_field"
