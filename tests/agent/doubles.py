"""Test doubles for the agent's turn (agent.modes): a model that writes its answer delta by delta with
its last delta late, and a TTS session that records when each sentence reached it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from smithy_core.aio.eventstream import DuplexEventStream

from agent.endpoint_stream import Audio, Control
from agent.tts_session import TTSSession


class LateLastDeltaModel:
    """A `TextSource`: yields `deltas` one by one, waiting `last_delay_s` before the last one, and
    notes when it finished (`ended_at`, on time.perf_counter's clock)."""

    def __init__(self, deltas: list[str], last_delay_s: float) -> None:
        self.deltas = deltas
        self.last_delay_s = last_delay_s
        self.ended_at: float | None = None

    async def __call__(self, prompt: str) -> AsyncIterator[str]:
        for index, delta in enumerate(self.deltas):
            if index == len(self.deltas) - 1:
                await asyncio.sleep(self.last_delay_s)
            yield delta
        self.ended_at = time.perf_counter()


class FailingModel:
    """A `TextSource` that fails before its first delta, as a model refusing the turn does."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def __call__(self, prompt: str) -> AsyncIterator[str]:
        raise self.exc
        yield ""  # an async generator


WORD_MS = 100
"""Each word the `RecordingTTSSession` speaks lasts this long: 2,400 samples of silent PCM."""


class RecordingTTSSession:
    """Stands in for `TTSSession`, which asks for word timings on every request: records each sentence
    with the time it was sent, and answers each with a `synthesis_start`, a `words` frame (word i from
    i * WORD_MS to 20 ms before the next, from the request's first sample; none with `words=False`, as
    from a container that predates word timings), WORD_MS of silent PCM per word (one chunk each, each
    after `chunk_delay_s`, so an interrupt can land mid-answer) and a `synthesis_complete`, then ends
    the session once `finish()` was called. `closed_at` notes when the turn released it. With `queued`
    N, the first request is first told it waits for a slot, at places N down to 1 (a full replica:
    tts/scheduling/admission.py)."""

    def __init__(self, words: bool = True, chunk_delay_s: float = 0.0, queued: int = 0) -> None:
        self.sent: list[tuple[float, str]] = []
        self.closed = False
        self.closed_at: float | None = None
        self.chunks_sent = 0
        self._words = words
        self._chunk_delay_s = chunk_delay_s
        self._replies: asyncio.Queue[Any] = asyncio.Queue()
        self._queued = queued

    async def synthesize(self, text: str, request_id: str, voice: str, audio_format: str) -> None:
        self.sent.append((time.perf_counter(), text))
        written = text.split()
        self._replies.put_nowait(Control({"type": "synthesis_start", "request_id": request_id}))
        for position in range(self._queued, 0, -1):
            self._replies.put_nowait(
                Control({"type": "queued", "request_id": request_id, "position": position})
            )
        self._queued = 0
        if self._words:
            timings = [
                {"text": word, "start_ms": i * WORD_MS, "end_ms": (i + 1) * WORD_MS - 20}
                for i, word in enumerate(written)
            ]
            self._replies.put_nowait(Control({"type": "words", "request_id": request_id, "words": timings}))
        for _ in written:
            self._replies.put_nowait(Audio(b"\x00\x00" * (24 * WORD_MS)))
        self._replies.put_nowait(
            Control(
                {
                    "type": "synthesis_complete",
                    "request_id": request_id,
                    "duration_s": len(written) * WORD_MS / 1000,
                }
            )
        )

    async def finish(self) -> None:
        self._replies.put_nowait(None)

    async def chunks(self) -> AsyncIterator[Audio | Control]:
        while (chunk := await self._replies.get()) is not None:
            if isinstance(chunk, Audio):
                await asyncio.sleep(self._chunk_delay_s)
                self.chunks_sent += 1
            yield chunk

    async def aclose(self) -> None:
        self.closed = True
        self.closed_at = time.perf_counter()


class _QuietInput:
    """The input side of an official-client stream that accepts everything and sends nowhere."""

    async def send(self, event: Any) -> None:
        return None

    async def close(self) -> None:
        return None


def unanswered_tts_session() -> TTSSession:
    """A real `TTSSession` over the official client's own stream class (smithy's DuplexEventStream)
    whose endpoint has not answered yet: its output future is still pending, as in the first
    milliseconds of every session."""
    pending: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    return TTSSession(DuplexEventStream(input_stream=_QuietInput(), output_future=pending))


class SignalWatchingAgent:
    """Stands in for a Strands `Agent` on Bedrock: `stream_async` writes a long answer one delta every
    `interval_s` in a producer of its own (Strands reads Bedrock's stream in a worker thread), which
    tearing the generator down does not stop; only the invocation's `cancel_signal` does, at the next
    delta, as Strands closes the Bedrock stream at its next chunk. `produced` counts the deltas made;
    `finished` is set when the producer has stopped. Its history, `messages`, grows as Strands' does:
    the prompt as a user message, then the answer, or "Cancelled by user" for a cancelled one."""

    def __init__(
        self, interval_s: float = 0.02, deltas: int = 500, delta: Callable[[int], str] = "word{} ".format
    ) -> None:
        self.interval_s = interval_s
        self.deltas = deltas
        self.delta = delta
        self.produced = 0
        self.finished = asyncio.Event()
        self.messages: list[dict[str, Any]] = []

    async def stream_async(self, prompt: str, cancel_signal: Any = None) -> AsyncIterator[dict[str, Any]]:
        self.finished.clear()
        self.messages.append({"role": "user", "content": [{"text": prompt}]})
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        async def produce() -> None:
            try:
                for index in range(self.deltas):
                    if cancel_signal is not None and cancel_signal.is_set():
                        return
                    await asyncio.sleep(self.interval_s)
                    self.produced += 1
                    queue.put_nowait({"data": self.delta(index)})
            finally:
                queue.put_nowait(None)
                self.finished.set()

        producer = asyncio.create_task(produce())
        _PRODUCERS.add(producer)
        producer.add_done_callback(_PRODUCERS.discard)
        answer = ""
        while (event := await queue.get()) is not None:
            answer += event["data"]
            yield event
        cancelled = cancel_signal is not None and cancel_signal.is_set()
        self.messages.append(
            {"role": "assistant", "content": [{"text": "Cancelled by user" if cancelled else answer}]}
        )


_PRODUCERS: set[asyncio.Task[None]] = set()
