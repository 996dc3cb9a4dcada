"""What holds the loaded model in a running container: the configuration, the engine, the scheduler,
and whether it is ready.

The model loads in a background thread after the server starts listening, because SageMaker expects
the container to accept connections within 250 ms and treats `/ping` 200 as "ready". Once loaded, the
engine is warmed up and its decoder timed for the window plan (`tts/scheduling/speed.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from tts.config import TTSConfig
from tts.engines import create_engine
from tts.engines.base import SpeechEngine
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import Scheduler
from tts.scheduling.speed import measure_engine
from tts.wire.protocol import Catalog

log = logging.getLogger("tts.serving.model_host")


@dataclass
class ModelHost:
    config: TTSConfig
    engine: SpeechEngine | None = None
    scheduler: Scheduler | None = None
    catalog: Catalog | None = None
    load_error: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def load(self) -> None:
        """Load and warm up the model off the event loop, then start the scheduler."""
        try:
            engine = await asyncio.to_thread(create_engine, self.config)
            if self.config.voice not in engine.voices:
                raise ValueError(f"TTS_VOICE {self.config.voice!r} is not among the loaded voices")
            warm = await asyncio.to_thread(engine.warm_up, self.config.voice)
            plan = WindowPlan.from_config(self.config, engine.lanes)
            started = time.perf_counter()
            speed = await asyncio.to_thread(measure_engine, engine, self.config.voice, plan.lanes)
            timed = time.perf_counter() - started
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("model failed to load")
            return
        self.engine = engine
        self.catalog = Catalog(
            voices=frozenset(engine.voices),
            languages=frozenset(engine.phonemizer.languages),
            default_voice=self.config.voice,
            default_lang=self.config.lang,
            max_text_chars=self.config.max_text_chars,
        )
        self.scheduler = Scheduler(engine, plan, speed, workers=self.config.workers)
        self.scheduler.start()
        log.info(
            "ready: %s engine on %s, model %.2fs, warm-up %.2fs, decoder timed in %.2fs",
            engine.name,
            engine.device,
            engine.load_seconds,
            warm,
            timed,
        )
        self.ready.set()

    async def close(self) -> None:
        if self.scheduler is not None:
            await self.scheduler.stop()
