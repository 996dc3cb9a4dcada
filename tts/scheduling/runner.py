"""What runs a job's turn, in a worker thread, once the scheduler has picked it (`picking.py`): the
text side of a segment the turn begins, then one decoder step (`steps.py`), sized to what is left of the
budget once the text side has run. And, earlier, in the text workers from the moment the job is
submitted: the job's text (G2P, and with timestamps the mapping of its written words), so that a turn
never waits on it. A segment an SSML break precedes or follows has its silence made to measure
(`pauses.Breaks`) around the steps that begin and end it."""

from __future__ import annotations

import time

import numpy as np

from tts.engines.base import SpeechEngine
from tts.scheduling.calibration import Calibration
from tts.scheduling.jobs import Job
from tts.scheduling.plan import WindowPlan, Work
from tts.scheduling.steps import windowed
from tts.text.script import Segment
from tts.wire.audio import float_to_pcm16
from tts.wire.protocol import MAX_SPEED, MIN_SPEED


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
            segments = self._engine.speech_segments(
                request.speech, request.lang, request.timestamps, job.run_options
            )
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
            segment = job.segments.pop(0)
            if not segment.tokens:  # a break at the end: its silence alone
                return self._pcm(job, job.breaks.start(segment.pause_ms, np.zeros(0, np.float32))[0])
            self._begin_segment(job, segment)
        budget = job.budget_s
        if budget is not None:
            budget = max(0.0, budget - (time.perf_counter() - started))
        audio = job.windows.next(budget, job.sharing, job.later_segments + job.later_jobs, job.lead_s)
        return self._pcm(job, self._around_breaks(job, audio))

    @staticmethod
    def _around_breaks(job: Job, audio: np.ndarray) -> np.ndarray:
        """A step's audio with the silence of the breaks at its ends, and with timestamps the words of
        the segment it began (`job.begun`) placed after the break."""
        offset = 0
        if job.begun is not None:
            segment, features = job.begun
            job.begun = None
            if segment.pause_ms:  # its first step after a break: the break's silence
                pause, cut = job.breaks.start(segment.pause_ms, audio)
                audio = np.concatenate([pause, audio[cut:]])
                offset = len(pause) - cut
            if segment.words is not None:
                job.words = segment.words.times(features.durations, job.samples + offset)
        if job.windows.done and job.segments and job.segments[0].pause_ms:
            audio = job.breaks.end(audio)
        return audio

    @staticmethod
    def _pcm(job: Job, audio: np.ndarray) -> bytes:
        job.samples += len(audio)
        return float_to_pcm16(audio)

    def _begin_segment(self, job: Job, segment: Segment) -> None:
        """The text side of `segment` (timed into the calibration), at the request's speed times the
        segment's SSML rate, and its decode to come step by step."""
        request = job.request
        began = time.perf_counter()
        speed = min(max(request.speed * segment.rate, MIN_SPEED), MAX_SPEED)
        features = self._engine.features(list(segment.tokens), request.voice, speed, job.run_options)
        calibration = self._calibration
        if calibration is not None:
            calibration.text.observe(len(segment.tokens), time.perf_counter() - began)
            job.later_segments = [
                Work(calibration.frames(len(s.tokens) + 2), calibration.text.seconds(len(s.tokens)))
                for s in job.segments
            ]
        job.windows = windowed(self._engine, features, self._plan, self._speed, job.run_options)
        job.begun = (segment, features)
