"""What holds the loaded models in a running container: Whisper, Silero VAD, Smart Turn (unless
`STT_TURN_MODEL=off`), and whether they are ready.

They load in a background thread after the server starts listening (SageMaker expects the container to
accept connections at once and reads `/ping` 200 as "ready"), then one decode warms Whisper up so the
first user does not pay CTranslate2's first-call allocation.

Decodes go through `decode`, one at a time per container (CTranslate2 runs one per worker anyway), by
priority: a live stream's finals first, then its partials, then whole clips (`POST /invocations`), so a
user's turn is never queued behind another stream's partial, nor a live transcript behind a long clip.
A clip is decoded window by window (`clip_windows`, cut at the quietest moment near each 28 s), each
window a decode of its own, so live decodes go in between: a 119 s clip decoded whole held another
user's live transcript 7.6 s, and its memory grew 241 MB. The turn model runs beside them
(`turn_complete`, one thread of its own, ~45 ms), so its verdict is in before the decode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from container_kit import container
from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.engines.smart_turn import SmartTurn
from stt.engines.vad import SileroVad
from stt.engines.weights import silero_vad_onnx, smart_turn_onnx
from stt.engines.whisper import Transcriber, Transcript

log = logging.getLogger("stt.serving.model_host")


FINAL, PARTIAL, CLIP = 0, 1, 2
"""Decode priorities, most urgent first."""
CLIP_WINDOW_S = 28.0
"""A clip's windows are at most this long: under Whisper's 30 s, so one window is one encoder pass."""
CUT_SEARCH_S = 4.0
"""Where a window may end: at the quietest 100 ms of its last CUT_SEARCH_S, not inside a word."""


def clip_windows(samples: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) sample ranges that cover `samples`, each at most CLIP_WINDOW_S, each cut at the
    lowest-energy 100 ms of its last CUT_SEARCH_S (a pause between words, where one exists)."""
    window, search, hop = (int(x * STT_SAMPLE_RATE) for x in (CLIP_WINDOW_S, CUT_SEARCH_S, 0.1))
    ranges, start = [], 0
    while len(samples) - start > window:
        tail = samples[start + window - search : start + window]
        energy = np.square(tail[: len(tail) // hop * hop].reshape(-1, hop)).sum(axis=1)
        end = start + window - search + int(np.argmin(energy)) * hop + hop // 2
        ranges.append((start, end))
        start = end
    ranges.append((start, len(samples)))
    return ranges


@dataclass
class ModelHost(container.ModelHost):
    loading = "models are loading"
    config: STTConfig
    transcriber: Transcriber | None = None
    vad: SileroVad | None = None
    turn_model: SmartTurn | None = None
    _turn: asyncio.Condition = field(default_factory=asyncio.Condition)
    _busy: bool = False
    _waiting: list[int] = field(default_factory=lambda: [0, 0, 0])

    async def load(self) -> None:
        try:
            vad = await asyncio.to_thread(SileroVad, silero_vad_onnx())
            if self.config.turn_model == "smart-turn":
                graph = await asyncio.to_thread(smart_turn_onnx, self.config.cache_dir)
                self.turn_model = await asyncio.to_thread(SmartTurn, graph)
                await asyncio.to_thread(self.turn_model.complete, np.zeros(STT_SAMPLE_RATE, np.float32))
            transcriber = await asyncio.to_thread(Transcriber, self.config)
            started = time.perf_counter()
            await asyncio.to_thread(transcriber.transcribe, np.zeros(STT_SAMPLE_RATE, np.float32), words=True)
            warm = time.perf_counter() - started
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("models failed to load")
            return
        self.vad, self.transcriber = vad, transcriber
        log.info(
            "ready: whisper %s on %s, loaded in %.2fs, warm-up %.2fs",
            transcriber.model_dir.name,
            transcriber.device,
            transcriber.load_seconds,
            warm,
        )
        self.ready.set()

    async def turn_complete(self, samples: np.ndarray) -> float | None:
        """Smart Turn's probability that `samples` is a finished turn; None with the turn model off."""
        if self.turn_model is None:
            return None
        return await asyncio.to_thread(self.turn_model.complete, samples)

    async def decode(self, samples: np.ndarray, *, final: bool, offset_ms: int = 0) -> Transcript:
        """A live stream's decode, off the event loop: a final, or a partial (no word timings)."""
        return await self._decode(samples, FINAL if final else PARTIAL, words=final, offset_ms=offset_ms)

    async def transcribe_clip(self, samples: np.ndarray) -> Transcript:
        """A whole clip, window by window at the lowest priority: its text and its timed words."""
        texts, words = [], []
        for start, end in clip_windows(samples):
            offset_ms = round(start * 1000 / STT_SAMPLE_RATE)
            part = await self._decode(samples[start:end], CLIP, words=True, offset_ms=offset_ms)
            texts.append(part.text)
            words += part.words
        return Transcript(" ".join(text for text in texts if text), words)

    async def _decode(self, samples: np.ndarray, priority: int, *, words: bool, offset_ms: int) -> Transcript:
        """One decode once none is running and none more urgent waits."""
        assert self.transcriber is not None
        transcriber = self.transcriber
        async with self._turn:
            self._waiting[priority] += 1
            try:
                await self._turn.wait_for(lambda: not self._busy and not any(self._waiting[:priority]))
            except BaseException:  # cancelled while waiting (its client went away): the others re-check
                self._waiting[priority] -= 1
                self._turn.notify_all()
                raise
            self._waiting[priority] -= 1
            self._busy = True
        try:
            return await asyncio.to_thread(transcriber.transcribe, samples, words=words, offset_ms=offset_ms)
        finally:
            async with self._turn:
                self._busy = False
                self._turn.notify_all()
