"""The one client session loop (tools/tts_client.py) on a scripted channel: every frame is kept with its
arrival time, a session is spoken to its last `synthesis_complete` and closed, an error frame raises, and
a container that stops answering fails the read instead of hanging it. (On the real container: the
serving, reliability and integration tests.)"""

from __future__ import annotations

import asyncio
import json

import pytest

from facts import PCM_BYTES_PER_S
from tools.tts_client import (
    ContainerError,
    SessionEnded,
    Transcript,
    close_and_drain,
    is_control,
    read_until,
    speak,
)


class ScriptedChannel:
    """A channel that answers each synthesize message with the frames a container sends for it, and
    ends the session normally when asked to close; `silent` stops answering altogether."""

    def __init__(self, audio_frames: int = 2, error_for: str | None = None, silent: bool = False) -> None:
        self.sent: list[object] = []
        self._frames: asyncio.Queue = asyncio.Queue()
        self._audio_frames = audio_frames
        self._error_for = error_for
        self._silent = silent

    async def send(self, message: dict | str | bytes) -> None:
        self.sent.append(message)
        if self._silent or not isinstance(message, dict):
            return
        rid = message.get("request_id", "r")
        if message.get("type") == "close":
            self._frames.put_nowait(SessionEnded(True))
        elif rid == self._error_for:
            self._frames.put_nowait(
                {"type": "error", "code": "unknown_voice", "message": "no", "request_id": rid}
            )
        else:
            self._frames.put_nowait({"type": "synthesis_start", "request_id": rid})
            for _ in range(self._audio_frames):
                self._frames.put_nowait(b"\0" * 4800)
            self._frames.put_nowait({"type": "synthesis_complete", "request_id": rid, "duration_s": 0.2})

    async def receive(self) -> dict | bytes:
        frame = await self._frames.get()
        if isinstance(frame, SessionEnded):
            raise frame
        return frame

    async def close(self) -> None:
        await self.send({"type": "close"})


async def test_a_session_is_spoken_to_its_last_completion_and_closed():
    channel = ScriptedChannel()
    messages = [{"text": "One.", "request_id": "a"}, {"text": "Two.", "request_id": "b"}]
    transcript = await speak(channel, messages, timeout_s=5)
    assert channel.sent == [*messages, {"type": "close"}], "all at once, then close"
    assert transcript.closed
    assert transcript.audio() == {"a": 9600, "b": 9600}
    assert len(transcript.controls("synthesis_complete")) == 2
    times = [received.at_s for received in transcript.received]
    assert times == sorted(times) and len(times) == 8
    arrivals = transcript.arrivals(since=times[0])
    assert [a.audio_s for a in arrivals] == [4800 / PCM_BYTES_PER_S] * 4
    assert all(a.at_s >= 0 for a in arrivals)
    first = transcript.first(is_control("synthesis_complete", "b"))
    assert first.frame["request_id"] == "b"
    assert transcript.audio_after(transcript.controls("synthesis_start")[1]) == [b"\0" * 4800] * 2


async def test_an_error_frame_raises_with_its_code():
    with pytest.raises(ContainerError, match="unknown_voice"):
        await speak(ScriptedChannel(error_for="b"), [{"text": "x", "request_id": "b"}], timeout_s=5)


async def test_a_silent_container_fails_the_read_within_its_bound():
    channel = ScriptedChannel(silent=True)
    await channel.send(json.dumps({"text": "x"}))
    with pytest.raises(TimeoutError):
        await read_until(channel, Transcript(), is_control("synthesis_complete"), timeout_s=0.2)


async def test_closing_drains_what_is_still_sent():
    channel = ScriptedChannel()
    await channel.send({"text": "x", "request_id": "a"})
    transcript = await close_and_drain(channel, Transcript(), timeout_s=5)
    assert transcript.closed and transcript.audio() == {"a": 9600}
