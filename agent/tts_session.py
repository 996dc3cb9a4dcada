"""One persistent bidirectional session to the Kokoro endpoint (an `agent.endpoint_stream`).

Sentences are sent the moment they exist (the container queues them and computes them back to back);
nothing waits for `synthesis_complete` before sending the next one. Every request asks for its word
timings.
"""

from __future__ import annotations

from typing import Any

from agent.endpoint_stream import Control, EndpointStream, EndpointStreamError


class TTSSession(EndpointStream):
    """Use as `async with await TTSSession.open(client, endpoint) as session:`.

    Ending a session is in-band: `finish()` sends `{"type": "close"}`, the container finishes what is
    queued and closes the WebSocket, and only then does the client end its input stream. Ending the
    input stream first would make the platform close the container's WebSocket at once, dropping the
    audio still being computed.
    """

    _finished = False

    async def synthesize(self, text: str, request_id: str, voice: str, audio_format: str) -> None:
        """Queue `text` as request `request_id`, with its word timings (`words` control frames before
        each segment's audio): the agent relays them as captions and keeps them for barge-in."""
        await self.send(
            {
                "text": text,
                "request_id": request_id,
                "voice": voice,
                "format": audio_format,
                "timestamps": True,
            }
        )

    async def voices(self) -> dict[str, Any]:
        """The endpoint's voice list (`{"type": "voices"}`): each voice's id, language and gender, and the
        default; then the session is finished."""
        await self.send({"type": "voices"})
        async for chunk in self.chunks():
            if isinstance(chunk, Control) and chunk.type == "voices":
                await self.finish()
                return chunk.message
            if isinstance(chunk, Control) and chunk.type == "error":
                raise EndpointStreamError(chunk.message.get("code"), str(chunk.message.get("message")))
        raise EndpointStreamError("NoVoices", "the endpoint ended the session without its voice list")

    async def cancel(self, request_id: str | None = None) -> None:
        await self.send(
            {"type": "cancel"} if request_id is None else {"type": "cancel", "request_id": request_id}
        )

    async def finish(self) -> None:
        """No more messages: the container finishes what is queued, then ends the session."""
        if not self._finished:
            self._finished = True
            await self.send({"type": "close"})

    async def _before_close(self) -> None:
        """A session that was not finished was abandoned (barge-in, a client that went away): cancel
        what is queued first, so the endpoint stops computing unwanted audio."""
        if not self._finished:
            await self.cancel()
            await self.finish()
