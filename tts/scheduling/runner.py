"""What runs a job's turn, in a worker thread, once the scheduler has picked it (`picking.py`): the
text side of a segment the turn begins, then one decoder step (`steps.py`), sized to what is left of the
budget once the text side has run. And, earlier, in the text workers from the moment the job is
submitted: the job's text (G2P, and with timestamps the mapping of its written words), so that a turn
never waits on it."""

from __future__ import annotations

import time

from tts.engines.base import SpeechEngine
from tts.scheduling.calibration import Calibration
from tts.scheduling.jobs import Job
from tts.scheduling.plan import WindowPlan, Work
from tts.scheduling.steps import windowed
from tts.wire.audio import float_to_pcm16


class StepRunner:
    def __init__(self, engine: SpeechEngine, plan: WindowPlan, calibration: Calibration | None) -> None:
        self._engine = engine
        self._plan = plan
        # None: not measured, so no step is sized and no text side timed.
        self._calibration = calibration
        self._speed = calibration.decode if calibration is not None else None

    def prepare_text(self, job: Job) -> None:
        """In a text worker: the job's G2P, and with timestamps the mapping of its written words;
        a failure is kept for the job's turn to report."""
        request = job.request
        if job.cancelled:
            return
        try:
            if request.written is None:
                segments = self._engine.segments(request.text, request.lang)
            else:
                timed = self._engine.timed_segments(
                    request.written, request.text, request.lang, job.run_options
                )
                job.word_tokens = [words for _, words in timed]
                segments = [tokens for tokens, _ in timed]
            job.segment_count = len(segments)
            job.segments = segments
        except Exception as exc:  # reported at the job's turn, on its own audio queue
            job.text_error = exc

    def run(self, job: Job) -> bytes | None:
        """In a worker thread: the text side on a segment's first turn, then one decoder step, sized
        to what is left of the budget once the text side has run; its PCM (None: nothing to run)."""
        started = time.perf_counter()
        if job.started_at is None:
            job.started_at = started
        if job.text_error is not None:
            raise job.text_error
        if job.cancelled or job.segments is None:
            return None
        if job.windows is None or job.windows.done:
            if not job.segments:
                return None
            self._begin_segment(job)
        budget = job.budget_s
        if budget is not None:
            budget = max(0.0, budget - (time.perf_counter() - started))
        audio = job.windows.next(budget, job.sharing, job.later_segments + job.later_jobs, job.lead_s)
        job.samples += len(audio)
        return float_to_pcm16(audio)

    def _begin_segment(self, job: Job) -> None:
        """The text side of the job's next segment (timed into the calibration), its decode to come step
        by step, and with timestamps its words on the job's audio timeline."""
        request = job.request
        tokens = job.segments.pop(0)
        began = time.perf_counter()
        features = self._engine.features(tokens, request.voice, request.speed, job.run_options)
        calibration = self._calibration
        if calibration is not None:
            calibration.text.observe(len(tokens), time.perf_counter() - began)
            job.later_segments = [
                Work(calibration.frames(len(t) + 2), calibration.text.seconds(len(t))) for t in job.segments
            ]
        job.windows = windowed(self._engine, features, self._plan, self._speed, job.run_options)
        if job.word_tokens:
            job.words = job.word_tokens.pop(0).times(features.durations, job.samples)
