"""One bidirectional session to the Whisper endpoint (an `agent.endpoint_stream`): microphone PCM in,
the container's transcripts out (stt/README.md: `speech_started`, `partial`, `final`, `done`, `error`).

Audio goes as BINARY parts of 16 kHz mono s16le (`facts.STT_SAMPLE_RATE`); `end()` says no more audio
is coming, and the container answers the open utterance's final and `done`, then ends the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent.endpoint_stream import Control, EndpointStream
from facts import STT_SAMPLE_RATE

AUDIO_PART_BYTES = 64 * 1024
"""2 s of 16 kHz s16le: a browser's capture sends 20-100 ms a frame, so this splits only a client's
unusually large frame (an even size keeps every part whole samples)."""


class STTSession(EndpointStream):
    _ended = False

    async def start(self) -> None:
        """Says what the audio is, so the container refuses a wrong rate before any audio."""
        await self.send({"type": "start", "sample_rate": STT_SAMPLE_RATE})

    async def audio(self, pcm: bytes) -> None:
        """Any amount of audio, in parts of at most AUDIO_PART_BYTES: the container refuses a WebSocket
        message over 1 MiB (stt/__main__.py), and a client's 2 MiB frame once ended the conversation
        with `stt_stream_error`."""
        for start in range(0, len(pcm), AUDIO_PART_BYTES):
            await self.send_bytes(pcm[start : start + AUDIO_PART_BYTES])

    async def end(self) -> None:
        if not self._ended:
            self._ended = True
            await self.send({"type": "end"})

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        """The container's messages, in order, until it ends the stream (it sends no audio)."""
        async for chunk in self.chunks():
            if isinstance(chunk, Control):
                yield chunk.message

    async def _before_close(self) -> None:
        await self.end()
