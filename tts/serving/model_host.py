"""What holds the loaded model in a running container: the configuration, the engine, the scheduler,
and whether it is ready.

The model loads in a background thread after the server starts listening, because SageMaker expects
the container to accept connections within 250 ms and treats `/ping` 200 as "ready". Once loaded, the
engine is warmed up and calibrated (`tts/scheduling/calibration.py`: its text side and decoder timed for
the window plan, the capacity and the deadlines); the figures, moved by every step timed since, are
written to the cache dir under the CPU's signature every CALIBRATION_SAVE_S and at close."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass

from container_kit import container
from tts.config import TTSConfig
from tts.engines import create_engine
from tts.engines.base import SpeechEngine
from tts.scheduling import calibration as calibrations
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import Scheduler
from tts.wire.protocol import Catalog

log = logging.getLogger("tts.serving.model_host")

# How often a live replica writes its calibration back: the figures move by a fifth of a step's
# difference (SPEED_SMOOTHING), so a minute of speech has moved them as far as they go.
CALIBRATION_SAVE_S = 60.0


@dataclass
class ModelHost(container.ModelHost):
    config: TTSConfig
    engine: SpeechEngine | None = None
    scheduler: Scheduler | None = None
    catalog: Catalog | None = None
    _saving: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Load and warm up the model off the event loop, then start the scheduler."""
        try:
            engine = await asyncio.to_thread(create_engine, self.config)
            if self.config.voice not in engine.voices:
                raise ValueError(f"TTS_VOICE {self.config.voice!r} is not among the loaded voices")
            warm = await asyncio.to_thread(engine.warm_up, self.config.voice)
            plan = WindowPlan.from_config(self.config, engine.lanes)
            threads = self.config.threads or os.cpu_count() or 1
            calibration = await asyncio.to_thread(calibrations.calibrate, engine, self.config.voice, threads)
            cached = calibrations.load_cached(self.config.cache_dir, calibration.signature)
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
        self.scheduler = Scheduler(
            engine, plan, calibration, workers=self.config.workers, capacity=self.config.capacity
        )
        self.scheduler.start()
        self._save()  # a cache dir it cannot write is a warning, not a replica that never gets ready
        log.info(
            "ready: %s engine on %s, model %.2fs, warm-up %.2fs; calibration %s, capacity %d (cached "
            "before: %s)",
            engine.name,
            engine.device,
            engine.load_seconds,
            warm,
            json.dumps(calibration.summary()),
            self.scheduler.capacity,
            json.dumps(cached.summary()) if cached else "none",
        )
        self._saving = asyncio.create_task(self._save_calibration(), name="tts-calibration-save")
        self.ready.set()

    def serving(self) -> tuple[SpeechEngine, Scheduler, Catalog]:
        """The loaded parts, which `load` sets before `ready` (the kit's routes wait for it)."""
        assert self.engine is not None and self.scheduler is not None and self.catalog is not None
        return self.engine, self.scheduler, self.catalog

    async def _save_calibration(self) -> None:
        while True:
            await asyncio.sleep(CALIBRATION_SAVE_S)
            self._save()

    def _save(self) -> None:
        if self.scheduler is not None and self.scheduler.calibration is not None:
            try:
                calibrations.save(self.config.cache_dir, self.scheduler.calibration)
            except OSError:
                log.warning("could not write the calibration to %s", self.config.cache_dir, exc_info=True)

    async def close(self) -> None:
        if self._saving is not None:
            self._saving.cancel()
        self._save()
        if self.scheduler is not None:
            await self.scheduler.stop()
