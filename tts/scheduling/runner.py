"""What runs a job's turn, in a worker thread, once the scheduler has picked it (`picking.py`): the
text side of a segment the turn begins, then one decoder step (`steps.py`), sized to what is left of the
budget once the text side has run. Several jobs picked together (a batch: `Picker.pick`) take their
turns at once: their text sides one after another, then every one's step in one `decode_batch`
(`run_many`). A segment an SSML break precedes or follows has its silence made to measure
(`pauses.Breaks`) around the steps that begin and end it. And, earlier, in the text workers from the
moment the job is submitted: the job's text (G2P, and with timestamps the mapping of its written words),
so that a turn never waits on it."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from tts.engines.base import SpeechEngine, SynthesisCancelled
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
        turn = self._begin_turn(job, started)
        if turn is not True:
            return turn or None
        return self._step(job, started)

    def run_many(self, jobs: list[Job]) -> list[Outcome]:
        """In a worker thread: the turns of jobs picked together, what each turn gave (its PCM, None, or
        what it raised). One job: `run`. Several: their text sides one after another, then each one's
        step, sized to what is left of its budget (as alone: `Picker.pick` formed the batch so that
        it fits), all in one `decode_batch`, timed into the calibration (`DecodeSpeed.observe_batch`);
        a job whose windows came back None was cancelled (`SynthesisCancelled`), the others go on."""
        if len(jobs) == 1:
            return [_outcome(lambda: self.run(jobs[0]))]
        started = time.perf_counter()
        outcomes: list[Outcome] = [None] * len(jobs)
        stepping = []
        for index, job in enumerate(jobs):
            try:
                turn = self._begin_turn(job, started)
            except Exception as exc:
                outcomes[index] = exc
                continue
            if turn is True:
                stepping.append(index)
            else:
                outcomes[index] = turn or None
        if len(stepping) == 1:
            outcomes[stepping[0]] = _outcome(lambda: self._step(jobs[stepping[0]], started))
        elif stepping:
            together = self._decode_together([jobs[index] for index in stepping], started)
            for index, outcome in zip(stepping, together, strict=True):
                outcomes[index] = outcome
        return outcomes

    def _step(self, job: Job, started: float) -> bytes:
        """The job's decoder step alone (its turn begun at `started`), sized to what is left of its
        budget."""
        budget = _left(job.budget_s, started)
        audio = job.windows.next(budget, job.sharing, job.later_segments + job.later_jobs, job.lead_s)
        return self._pcm(job, _around_breaks(job, audio))

    def _decode_together(self, jobs: list[Job], started: float) -> list[Outcome]:
        """One step of each of `jobs` (their turns begun), in one `decode_batch`."""
        steps = [
            job.windows.plan(
                _left(job.budget_s, started), job.sharing, job.later_segments + job.later_jobs, job.lead_s
            )
            for job in jobs
        ]
        windows = [job.windows.batch(step) for job, step in zip(jobs, steps, strict=True)]
        flat = [window for group in windows for window in group]
        began = time.perf_counter()
        try:
            decoded = self._engine.decode_batch(flat)
        except SynthesisCancelled as cancelled:
            return [cancelled] * len(jobs)
        except Exception as exc:
            return [exc] * len(jobs)
        if self._speed is not None:
            self._speed.observe_batch([window.frames for window in flat], time.perf_counter() - began)
        outcomes: list[Outcome] = []
        for job, step, group in zip(jobs, steps, windows, strict=True):
            pieces, decoded = decoded[: len(group)], decoded[len(group) :]
            if any(piece is None for piece in pieces):
                outcomes.append(SynthesisCancelled())
            else:
                outcomes.append(self._pcm(job, _around_breaks(job, job.windows.complete(step, pieces))))
        return outcomes

    def _begin_turn(self, job: Job, started: float) -> bool | bytes:
        """The start of the job's turn: the text side when it begins a segment. True: it has a step to
        decode; False: nothing to run (cancelled, or done); bytes: a break at its end, whose silence is
        the whole turn. Raises what its text worker raised."""
        if job.started_at is None:
            job.started_at = started
        if job.text_error is not None:
            raise job.text_error
        if job.cancelled or job.segments is None:
            return False
        if job.windows is None or job.windows.done:
            if not job.segments:
                return False
            segment = job.segments.pop(0)
            if not segment.tokens:
                return self._pcm(job, job.breaks.start(segment.pause_ms, np.zeros(0, np.float32))[0])
            self._begin_segment(job, segment)
        return True

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


def _around_breaks(job: Job, audio: np.ndarray) -> np.ndarray:
    """A step's audio with the silence of the breaks at its ends, and with timestamps the words of the
    segment it began (`job.begun`) placed after the break."""
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


Outcome = bytes | BaseException | None
"""What a job's turn gave: its PCM, nothing to run (None), or what it raised."""


def _outcome(turn: Callable[[], bytes | None]) -> Outcome:
    try:
        return turn()
    except Exception as exc:
        return exc


def _left(budget_s: float | None, started: float) -> float | None:
    """What is left of a step's budget once its turn has run since `started` (text sides)."""
    return None if budget_s is None else max(0.0, budget_s - (time.perf_counter() - started))
