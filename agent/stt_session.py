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


class STTSession(EndpointStream):
    _ended = False

    async def start(self) -> None:
        """Says what the audio is, so the container refuses a wrong rate before any audio."""
        await self.send({"type": "start", "sample_rate": STT_SAMPLE_RATE})

    async def audio(self, pcm: bytes) -> None:
        await self.send_bytes(pcm)

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
