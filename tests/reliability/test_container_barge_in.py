"""Barge-in on the real container: a cancel stops audio that is already computed and being sent.

The container paces its frames here (`TTS_SEND_AHEAD_MS`), so a whole segment's audio is computed
long before it is all sent: cancelling right after the first frame of a request catches it in the
middle of sending. Every read is bounded (tools/tts_client.py).
"""

import json

import pytest

from tests.support.tts_container import tts_container
from tools.tts_client import Transcript, close_and_drain, connect, is_control, read_until

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

SEND_AHEAD_MS = 500
LONG = "A long sentence that takes a while to speak. Another one follows it, just as long."


@pytest.fixture(scope="module")
def paced_server():
    with tts_container({"TTS_SEND_AHEAD_MS": str(SEND_AHEAD_MS)}) as (server, _):
        yield server


def is_audio(frame) -> bool:
    return isinstance(frame, bytes)


async def test_cancel_all_stops_the_request_being_sent_and_lists_every_request(paced_server):
    async with connect(paced_server.ws) as ws:
        await ws.send(json.dumps({"text": LONG, "request_id": "a"}))
        await ws.send(json.dumps({"text": "Queued behind it.", "request_id": "b"}))
        transcript = await read_until(ws, Transcript(), is_audio)
        await ws.send(json.dumps({"type": "cancel"}))
        await read_until(ws, transcript, is_control("cancelled"))
        await ws.send(json.dumps({"text": "After the barge-in.", "request_id": "next"}))
        await close_and_drain(ws, transcript)
    (cancelled,) = transcript.controls("cancelled")
    print(f"\nbarge-in: {transcript.audio()} bytes per request; {cancelled}")
    assert cancelled["request_ids"] == ["a", "b"]
    assert transcript.audio_after(cancelled) == [], "no frame of a cancelled request after `cancelled`"
    completed = [c["request_id"] for c in transcript.controls("synthesis_complete")]
    assert completed == ["next"], "a cancelled request never completes"
    assert transcript.closed


async def test_cancel_by_id_in_the_middle_of_sending(paced_server):
    """`a` is computed and being sent when it is cancelled; `b` (the same text) then plays whole."""
    async with connect(paced_server.ws) as ws:
        await ws.send(json.dumps({"text": LONG, "request_id": "a"}))
        await ws.send(json.dumps({"text": LONG, "request_id": "b"}))
        transcript = await read_until(ws, Transcript(), is_audio)
        await ws.send(json.dumps({"type": "cancel", "request_id": "a"}))
        await read_until(ws, transcript, is_control("synthesis_complete", "b"))
        await close_and_drain(ws, transcript)
    (cancelled,) = transcript.controls("cancelled")
    audio = transcript.audio()
    (complete,) = transcript.controls("synthesis_complete")
    print(f"\ncancel a mid-send: received {audio}; b complete: {complete}")
    assert cancelled["request_ids"] == ["a"]
    assert complete["request_id"] == "b" and audio["b"] == complete["audio_bytes"]
    assert transcript.audio_after(cancelled) == []
    assert audio["a"] < complete["audio_bytes"] / 2, "most of `a` (same length as `b`) must never be sent"


PCM_BYTES_PER_S = 24_000 * 2
LONGER = (
    "This answer is long on purpose, so that its audio is computed well before it is played. "
    "The container paces every frame to real time, and a barge-in must stop the frames it still holds."
)


def audio_s(transcript: Transcript) -> float:
    return sum(transcript.audio().values()) / PCM_BYTES_PER_S


async def test_cancel_stops_computed_audio_that_is_still_being_paced_out(paced_server):
    """The cancel comes in the middle of a decoder step whose audio is computed and being paced out
    frame by frame (the steps grow to 3 s; 2 s of audio in, the third step is playing): the sender
    must stop between two frames of it, not at the end of the step."""
    async with connect(paced_server.ws) as ws:
        await ws.send(json.dumps({"text": LONGER, "request_id": "a", "format": "pcm"}))
        transcript = await read_until(ws, Transcript(), is_audio)
        while audio_s(transcript) < 2.0:
            await read_until(ws, transcript, is_audio)
        await ws.send(json.dumps({"type": "cancel", "request_id": "a"}))
        await read_until(ws, transcript, is_control("cancelled"))
        # the session goes on (a short answer: a whole one paced out is 8 s more of this test)
        await ws.send(json.dumps({"text": "After the barge-in.", "request_id": "b", "format": "pcm"}))
        await read_until(ws, transcript, is_control("synthesis_complete", "b"))
        await close_and_drain(ws, transcript)
    (cancelled,) = transcript.controls("cancelled")
    audio = transcript.audio()
    late = transcript.audio_after(cancelled)
    print(f"\ncancel while pacing: a sent {audio['a']} bytes; late {len(late)}")
    assert cancelled["request_ids"] == ["a"]
    assert [c["request_id"] for c in transcript.controls("synthesis_complete")] == ["b"], (
        "`a` never completes"
    )
    assert late == [], f"{sum(map(len, late)) / PCM_BYTES_PER_S:.2f} s of `a` came after `cancelled`"
    # what was sent: the 2 s read, the 0.5 s send-ahead lead and frames in flight, of over 8 s of `a`
    assert audio["a"] < 3.5 * PCM_BYTES_PER_S
