"""What holds the loaded models in a running container: Whisper, Silero VAD, Smart Turn (unless
`STT_TURN_MODEL=off`), and whether they are ready.

They load in a background thread after the server starts listening (SageMaker expects the container to
accept connections at once and reads `/ping` 200 as "ready"), then one decode warms Whisper up so the
first user does not pay CTranslate2's first-call allocation.

Decodes go through `decode`, one at a time per container (CTranslate2 runs one per worker anyway):
finals first, so a user's turn is never queued behind another stream's partial. The turn model runs
beside them (`turn_complete`, one thread of its own, ~45 ms), so its verdict is in before the decode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.engines.smart_turn import SmartTurn
from stt.engines.vad import SileroVad
from stt.engines.weights import silero_vad_onnx, smart_turn_onnx
from stt.engines.whisper import Transcriber, Transcript

log = logging.getLogger("stt.serving.model_host")


@dataclass
class ModelHost:
    config: STTConfig
    transcriber: Transcriber | None = None
    vad: SileroVad | None = None
    turn_model: SmartTurn | None = None
    load_error: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _finals_waiting: int = 0
    _no_finals: asyncio.Event = field(default_factory=asyncio.Event)

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
        self._no_finals.set()
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
        """Transcribe off the event loop; a partial waits while any final is waiting."""
        assert self.transcriber is not None
        transcriber = self.transcriber
        if final:
            self._finals_waiting += 1
            self._no_finals.clear()
        try:
            while True:
                if not final:
                    await self._no_finals.wait()
                async with self._lock:
                    if final or self._finals_waiting == 0:
                        return await asyncio.to_thread(
                            transcriber.transcribe, samples, words=final, offset_ms=offset_ms
                        )
        finally:
            if final:
                self._finals_waiting -= 1
                if self._finals_waiting == 0:
                    self._no_finals.set()
