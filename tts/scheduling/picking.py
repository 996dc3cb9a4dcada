"""Whose step runs next, of the sessions ready for one: earliest deadline first (`deadlines.py`: when
each listener runs out of audio; ties: the one waiting longest), and what the picked job's step is
planned with: its budget (for a playing listener: `deadlines.budget` over every ready session's deadline
in order), the sessions sharing the engine, the session's queued work, and its listener's lead (kept
back from the reader from the first step of a session not yet started, when calibrated). The scheduler
puts the picked session in flight (`scheduler.py`); the runner runs its turn (`runner.py`).

On an engine that decodes windows of several sessions in one forward pass (`SpeechEngine.batch` > 1,
the torch engine; its cost measured: `DecodeSpeed.batch_seconds`), the next sessions in that order join
the first one's turn, each with the step it would get alone with the first one's budget, while the
turn's predicted time (their text sides one after another, then their windows in one pass) stays
within the longer of what the first one's turn would take alone and BUDGET_SHARE of the budget left
once they are all served at once (the others' deadlines in order after it: `deadlines.budget`). So
nobody, in the batch or waiting, is served later than the model promised it unbatched: a new
session's first window (the earliest deadline, or close to it) never waits longer for the company,
and a playing listener's next step comes in one turn instead of after the others'. The ONNX engine
decodes one window per call (`batch` 1): it is never given a batch.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable, Sequence

from tts.scheduling import deadlines
from tts.scheduling.admission import Slots
from tts.scheduling.calibration import Calibration
from tts.scheduling.jobs import Job, estimated
from tts.scheduling.listeners import Listeners
from tts.scheduling.plan import BUDGET_SHARE, WindowPlan, Work


class Picker:
    def __init__(
        self,
        plan: WindowPlan,
        calibration: Calibration | None,
        queues: dict[Hashable, deque[Job]],
        listeners: Listeners,
        slots: Slots,
        batch: int = 1,
    ) -> None:
        """Over the scheduler's own `queues` (per session, its jobs in order), `listeners` and `slots`;
        `batch`: the windows the engine decodes in one pass (`SpeechEngine.batch`)."""
        self._plan = plan
        self._calibration = calibration
        self._speed = calibration.decode if calibration is not None else None
        self._queues = queues
        self._listeners = listeners
        self._slots = slots
        self._batch = batch

    def pick(self, ready: Sequence[Hashable]) -> list[Job]:
        """The head job of the `ready` session (in rotation order: the longest waiting first) with the
        earliest deadline, and on an engine that batches those that join its turn (the module's
        docstring), their steps' figures set."""
        now = time.perf_counter()
        self._listeners.forget_played_out(now, self._queues)
        runs_out_at = self._listeners.runs_out_at
        # Started sessions with work to do, playing or stalled: each needs the engine at real time. (One
        # whose work is done is not counted, though its listener may still be playing: a closed session
        # looks the same from here.)
        started = sum(1 for owner in runs_out_at if owner in self._queues)
        order = sorted(
            ((self._deadline(o, started), n, o) for n, o in enumerate(ready)),
            key=lambda entry: entry[:2],
        )
        dues, owners = [due for due, *_ in order], [owner for *_, owner in order]
        budget = deadlines.budget(now, dues)
        jobs = []
        for owner, due in zip(owners[: self._batched(owners, dues, budget, now)], dues, strict=False):
            job = self._queues[owner][0]
            job.budget_s = budget if self._playing(owner, due) else None
            job.sharing = self._slots.sharing(self._queues)
            job.later_jobs = estimated(list(self._queues[owner])[1:], self._calibration)
            starting = owner not in runs_out_at and owner not in self._listeners.lead
            if starting and self._calibration is not None:
                self._listeners.begin_lead(owner)
            job.lead_s = self._listeners.lead_s.get(owner)
            jobs.append(job)
        return jobs

    def _playing(self, owner: Hashable, due: float) -> bool:
        """Whether `owner`'s deadline `due` is its playing listener's (its step then has a budget)."""
        runs_out_at = self._listeners.runs_out_at
        return owner in runs_out_at and due == runs_out_at[owner]

    def _batched(self, owners: list[Hashable], dues: list[float], budget: float, now: float) -> int:
        """How many of `owners` (in deadline order, `dues`) take this turn together: 1 unless the engine
        batches; then while their turn's predicted time stays within the first one's alone and
        BUDGET_SHARE of the budget left with all of them served at once (the module's docstring)."""
        speed = self._speed
        if self._batch < 2 or speed is None or not speed.batch_frame_s or len(owners) < 2:
            return 1
        first = self._turn(owners[0], dues[0], budget)
        if first is None:
            return 1
        text_s, decoded = first
        alone = text_s + speed.seconds(decoded)
        size = 1
        for owner, due in zip(owners[1 : self._batch], dues[1:], strict=False):
            turn = self._turn(owner, due, budget)
            if turn is None:
                break
            text_s, decoded = text_s + turn[0], decoded + turn[1]
            left = deadlines.budget(now, [dues[0], *dues[size + 1 :]])
            if text_s + speed.batch_seconds(decoded) > max(alone, BUDGET_SHARE * left):
                break
            size += 1
        return size

    def _turn(self, owner: Hashable, due: float, budget: float) -> tuple[float, list[int]] | None:
        """The predicted turn of `owner`'s head job with `budget` (as the runner plans it, `runner.py`):
        its text side's seconds and the frames its step's windows decode (context included); None
        where there is nothing to predict (nothing to decode, a failure to report, a cancel)."""
        calibration, job = self._calibration, self._queues[owner][0]
        if calibration is None or job.cancelled or job.text_error is not None or job.segments is None:
            return None
        windows = job.windows
        if windows is not None and not windows.done:
            work, index, later, text_s = windows.remaining, windows.steps_taken, job.later_segments, 0.0
        elif job.segments:  # its turn begins a segment: the text side first
            tokens = [len(segment.tokens) for segment in job.segments]
            work, index = Work(calibration.frames(tokens[0] + 2)), 0
            text_s = calibration.text.seconds(tokens[0])
            later = [Work(calibration.frames(n + 2), calibration.text.seconds(n)) for n in tokens[1:]]
        else:
            return None
        lead_s = self._listeners.lead_s.get(owner, None if owner in self._listeners.runs_out_at else 0.0)
        step = self._plan.step(
            work.start,
            index,
            work.frames,
            max(0.0, budget - text_s) if self._playing(owner, due) else None,
            self._speed,
            self._slots.sharing(self._queues),
            [*later, *estimated(list(self._queues[owner])[1:], calibration)],
            lead_s,
        )
        return text_s, self._plan._decoded(work.start, step[-1][1] - work.start, work.frames, index)

    def room(self, now: float) -> bool:
        """Whether the engine can take a waiting session's first turn now (`deadlines.room`): every
        admitted session with work is playing, with audio enough to wait for it. One still starting
        (its first turn not taken, or its lead kept back) leaves no room: so two sessions let in
        together start one after the other, the second once the first has audio ahead of it."""
        if self._calibration is None:
            return True
        runs_out_at, slacks = self._listeners.runs_out_at, []
        for owner in self._slots.admitted:
            if owner not in self._queues:
                continue
            if owner in self._listeners.lead or owner not in runs_out_at:
                return False
            slacks.append(runs_out_at[owner] - now)
        return deadlines.room(
            slacks,
            deadlines.first_turn_s(self._plan, self._calibration),
            deadlines.shortest_step_s(self._plan, self._speed),
        )

    def _deadline(self, owner: Hashable, started: int) -> float:
        """When `owner`'s listener runs out of audio; for one with nothing to play yet, when its first
        turn would be done after one shortest step of each other `started` session."""
        head = self._queues[owner][0]
        runs_out_at = self._listeners.runs_out_at.get(owner)
        if runs_out_at is not None and runs_out_at > head.submitted_at:
            return runs_out_at
        others = started - (owner in self._listeners.runs_out_at)
        return deadlines.first_audio_due(
            head.submitted_at,
            deadlines.first_turn_s(self._plan, self._calibration),
            others,
            deadlines.shortest_step_s(self._plan, self._speed),
        )
