"""Whose step runs next, of the sessions ready for one: earliest deadline first (`deadlines.py`: when
each listener runs out of audio; ties: the one waiting longest), and what the picked job's step is
planned with: its budget (for a playing listener: `deadlines.budget` over every ready session's deadline
in order), the sessions sharing the engine, the session's queued work, and its listener's lead (kept
back from the reader from the first step of a session not yet started, when calibrated). The scheduler
puts the picked session in flight (`scheduler.py`); the runner runs its turn (`runner.py`)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable, Sequence

from tts.scheduling import deadlines
from tts.scheduling.admission import Slots
from tts.scheduling.calibration import Calibration
from tts.scheduling.jobs import Job, estimated
from tts.scheduling.listeners import Listeners
from tts.scheduling.plan import WindowPlan


class Picker:
    def __init__(
        self,
        plan: WindowPlan,
        calibration: Calibration | None,
        queues: dict[Hashable, deque[Job]],
        listeners: Listeners,
        slots: Slots,
    ) -> None:
        """Over the scheduler's own `queues` (per session, its jobs in order), `listeners` and `slots`."""
        self._plan = plan
        self._calibration = calibration
        self._speed = calibration.decode if calibration is not None else None
        self._queues = queues
        self._listeners = listeners
        self._slots = slots

    def pick(self, ready: Sequence[Hashable]) -> Job:
        """The head job of the `ready` session (in rotation order: the longest waiting first) with the
        earliest deadline, its step's figures set."""
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
        deadline, _, owner = order[0]
        job = self._queues[owner][0]
        playing = owner in runs_out_at and deadline == runs_out_at[owner]
        job.budget_s = deadlines.budget(now, [due for due, *_ in order]) if playing else None
        job.sharing = self._slots.sharing(self._queues)
        job.later_jobs = estimated(list(self._queues[owner])[1:], self._calibration)
        if owner not in runs_out_at and owner not in self._listeners.lead and self._calibration is not None:
            self._listeners.begin_lead(owner)
        job.lead_s = self._listeners.lead_s.get(owner)
        return job

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
