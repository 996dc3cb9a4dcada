"""The engine scheduler: one queue of synthesis jobs per session, served earliest deadline first, one
decoder step at a time.

Why: Kokoro has no batching (variable-length durations), so a container serves one forward pass per
worker at a time. Holding a lock for a whole session (the reference design) starves every other
session; here a session with four queued sentences and a session with one both make progress. The unit
of a turn is one step of a segment's frames (`plan.py`: one window, or on a CPU a few windows
decoded side by side; a segment's first turn also runs its text side), so a long sentence in one
session does not hold back another session's first audio, and a cancel takes effect within one step.
Within a session the next step starts the moment the previous one is done (no idle gap while the audio
is being sent). A session has at most one step in flight, which keeps its audio in order even with
several workers.

The room's parts: this module keeps the queues, the rotation of the sessions ready for a step
(`_ready`), the sessions in flight and held back, and the worker loop; `picking.py` picks whose step
runs next and with what budget; `runner.py` runs the picked job's turn in a worker thread and prepares
each job's text; `jobs.py` is what is served; `listeners.py` models each session's listener (when it
runs out of audio, the lead kept back before it starts, the PCM not yet taken); `admission.py` keeps
the slots and the line; `deadlines.py` the deadline arithmetic.

Policy (`picking.py`; deadlines: `deadlines.py`). Every turn the worker takes the session with the
earliest deadline (ties: the one waiting longest): a playing listener's is when it runs out of audio, a
new session's when its first turn would be done. Sessions far ahead of their listeners have late
deadlines, so they yield to every session closer to a gap, and run only when nobody nearer needs the
engine. The step itself is sized to the time left (`WindowPlan.step`, `deadlines.budget`); a listener
that will wait whatever the step gets the fixed plan's step instead (the most audio per second of
decoding). A step that begins a segment first runs its text side, and the decoder gets what is left of
the budget. A session's first window is the ramp's (`WindowPlan.first_window`) for the sessions admitted
with work: the shortest that the steps after it can follow, each computed while the audio before it
plays.
- No starvation: a waiting session's deadline stays where it is, while every step served moves the
  served session's deadline later by the audio it computed (a step after which the listener would
  already have run out restarts it from now), so every waiting session reaches the front.
- Cancel is unchanged: it drops queued jobs, terminates the running pass through the job's run flag,
  and the sender stops at the next frame.
- Text work is not an engine turn. A job's G2P (and, with timestamps, its word mapping: 0.9 s for a
  4,000-character URL on 2 cores, against 31 ms for its G2P) runs in the text workers, beside the
  decoder workers (`StepRunner.prepare_text`), from the moment the job is submitted; a session whose
  next job is still being prepared is passed over until it is ready, so one user's long text never holds
  back another's first audio. TEXT_WORKERS threads, so that a short request waits behind a long one only
  when that many long ones came before it (espeak-ng itself is called under one lock:
  `tts/text/g2p.py`).
- Admission (`admission.py`, its state in `Slots`): the calibration (`calibration.py`) says how many
  sessions the engine keeps gap-free (`capacity`; TTS_CAPACITY sets it instead). A session holds its
  slot from its first message until its listener has played out all it was sent, or, once it sends no
  more (`closed`: its WebSocket closed, a one-shot POST), until its work is computed; while the slots
  are full, a new session waits in line, told its place (`Queued` on its audio queue), and is admitted
  first in line when a slot frees and every playing listener has the audio to wait for its first turn
  (`Picker.room`: one at a time, so that it never makes a listener, nor the one let in just before it,
  stall); past `max_waiting(capacity)` it is refused (`EngineBusy`). `/ping` reports `load`.

Backpressure: a session's synthesis runs at most AHEAD_LIMIT_S of audio ahead of its reader. A job's
PCM waits in its `AudioQueue` until the reader (the session's sender, or `POST /invocations`) takes it;
a reader whose client stops reading blocks on the socket (the server's transport pauses writing at its
high-water mark), stops taking, and once its session has AHEAD_LIMIT_BYTES computed and untaken the
scheduler leaves the session out of the rotation until the reader takes some again. Memory stays flat
whatever a client queues, the engine serves the sessions that read, and a client that resumes gets
everything, in order (nothing is dropped, only computed later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor

from facts import PCM_BYTES_PER_S
from tts.engines.base import SpeechEngine, SynthesisCancelled
from tts.scheduling.admission import Queued, Slots
from tts.scheduling.calibration import Calibration
from tts.scheduling.jobs import Job, estimated
from tts.scheduling.listeners import Listeners
from tts.scheduling.picking import Picker
from tts.scheduling.plan import BUDGET_SHARE, WindowPlan
from tts.scheduling.runner import Outcome, StepRunner
from tts.wire.protocol import Synthesize

log = logging.getLogger("tts.scheduling.scheduler")

# How far one session's synthesis may run ahead of its reader: 10 s of audio, 480,000 bytes of 24 kHz
# s16le PCM, plus the one step in flight (with the default window plan a step is at most 120 frames
# plus a remainder under half a step: 4.5 s, 216 kB; with windowing off, a whole segment, up to ~30 s).
# Why 10 s: a client playing at real time needs the next step computed before the current one has
# played (one step, up to 4.5 s, ahead), and a pacing sender (TTS_SEND_AHEAD_MS, 0.5 s in the tests)
# keeps its lead on top; 10 s covers both twice over, so a client that reads never waits on the
# bound, while one that stops reading holds under 1 MB of PCM in the container instead of its whole
# queue (45 s of audio and +217 MB measured without the bound) and no longer takes engine turns.
AHEAD_LIMIT_S = 10.0
AHEAD_LIMIT_BYTES = int(AHEAD_LIMIT_S * PCM_BYTES_PER_S)


# Threads that prepare jobs' text (G2P, word mapping): see "Text work" above. The mapping is pure Python
# and shares the interpreter with the rest, so more threads would only split the same time finer; four
# keep three sessions' short requests from queueing behind one adversarial one.
TEXT_WORKERS = 4


class Scheduler:
    def __init__(
        self,
        engine: SpeechEngine,
        plan: WindowPlan,
        calibration: Calibration | None = None,
        workers: int = 1,
        capacity: int = 0,
    ) -> None:
        self._engine = engine
        self.plan = plan
        # None: not measured, so no step is sized, no first window ramped and no capacity claimed.
        self.calibration = calibration
        self.speed = calibration.decode if calibration is not None else None
        self._runner = StepRunner(engine, plan, calibration)
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kokoro")
        self._text_pool = ThreadPoolExecutor(max_workers=TEXT_WORKERS, thread_name_prefix="kokoro-text")
        self._queues: dict[Hashable, deque[Job]] = {}
        self._rotation: deque[Hashable] = deque()
        self._in_flight: set[Hashable] = set()
        self._held: set[Hashable] = set()  # owners left out of the rotation: AHEAD_LIMIT_BYTES ahead
        self._listeners = Listeners()
        # capacity: TTS_CAPACITY, 0 for the calibration's; counted with the engine's batch
        self._slots = Slots(plan, calibration, capacity, engine.batch)
        self._picker = Picker(plan, calibration, self._queues, self._listeners, self._slots, engine.batch)
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._work(), name=f"tts-worker-{i}") for i in range(self._workers)
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._text_pool.shutdown(wait=False, cancel_futures=True)

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    @property
    def ahead_bytes(self) -> dict[Hashable, int]:
        """Per owner with any: PCM bytes computed that its reader has not taken yet (a snapshot)."""
        return dict(self._listeners.ahead)

    @property
    def load(self) -> dict[str, object]:
        """For `/ping`: the sessions with audio to compute, the sessions the engine keeps gap-free
        (None until calibrated), whether the first are more, the sessions waiting for a slot, and the
        calibration's figures as they stand."""
        capacity = self.capacity
        calibration = self.calibration
        return {
            "sessions": len(self._queues),
            "capacity": capacity,
            "saturated": capacity is not None and len(self._queues) > capacity,
            "waiting": len(self._slots.waiting),
            "calibration": None
            if calibration is None
            else calibration.summary() | {"capacity": self.calibrated_capacity},
        }

    @property
    def capacity(self) -> int | None:
        """Sessions this replica admits at once (`Slots.capacity`: TTS_CAPACITY, or the calibration's)."""
        return self._slots.capacity

    @property
    def calibrated_capacity(self) -> int | None:
        """Sessions the engine keeps gap-free by the calibration as it stands
        (`Slots.calibrated_capacity`)."""
        return self._slots.calibrated_capacity

    def submit(self, owner: Hashable, request: Synthesize) -> Job:
        job = Job(owner=owner, request=request, run_options=self._engine.run_flag())
        job.audio.on_taken = lambda taken: self._taken(owner, taken)
        refusal = self._slots.enter(owner)
        if refusal is not None:
            job.finished = True
            job.audio.put_nowait(refusal)
            return job
        loop = asyncio.get_running_loop()
        prepared = loop.run_in_executor(self._text_pool, self._runner.prepare_text, job)
        prepared.add_done_callback(lambda _: self._wakeup.set())
        self._queues.setdefault(owner, deque()).append(job)
        if owner in self._slots.waiting:
            self._tell_places()
        elif owner not in self._in_flight and owner not in self._rotation and owner not in self._held:
            self._rotation.append(owner)
        self._wakeup.set()
        return job

    def _tell_places(self) -> None:
        """Each waiting session's head job hears its place in line whenever it changes."""
        for position, owner in enumerate(self._slots.waiting, 1):
            head = self._queues[owner][0]
            if head.position != position:
                head.position = position
                head.audio.put_nowait(Queued(position))

    def closed(self, owner: Hashable) -> None:
        """`owner` sends no more (its session closed; a one-shot request): its slot frees once its
        work is computed, without waiting for its listener to play it out."""
        if self._slots.close(owner):
            self._wakeup.set()

    def _admit(self, now: float) -> None:
        """Free the slots of the sessions with nothing queued or in flight whose listeners have played
        out all they were sent, or which send no more (`closed`), then admit the first in line while
        slots are free and the playing listeners have room for its first turn (`Picker.room`)."""
        runs_out_at = self._listeners.runs_out_at
        self._slots.free(
            lambda owner: owner not in self._queues and owner not in self._in_flight,
            lambda owner: runs_out_at.get(owner, 0.0) <= now,
        )
        admitted = self._slots.admit_waiting(lambda: self._picker.room(now))
        for owner in admitted:
            for job in self._queues[owner]:
                job.position = None
            self._rotation.append(owner)
        if admitted:
            self._tell_places()

    def _slot_frees_at(self) -> float | None:
        """When the next slot frees by itself (a listener playing out its last audio), if anyone waits."""
        if not self._slots.waiting:
            return None
        runs_out_at = self._listeners.runs_out_at
        idle = [runs_out_at.get(o, 0.0) for o in self._slots.admitted if o not in self._queues]
        return min(idle) if idle else None

    def cancel(self, job: Job) -> None:
        """Drop the job's queued steps; terminate its forward pass if one is running. A job whose
        audio is all computed is only marked, so that its sender drops the frames it has not sent yet.
        Cancelling twice is a no-op, so callers may cancel unconditionally."""
        if job.cancelled:
            return
        job.cancelled = True
        job.audio.on_taken = None  # its untaken audio will never be read: it no longer counts
        self._taken(job.owner, job.audio.pcm_bytes)
        if job.finished:
            return
        job.run_options.terminate = True
        queue = self._queues.get(job.owner)
        if queue is not None and job in queue and not (job is queue[0] and job.owner in self._in_flight):
            queue.remove(job)
            self._forget_if_idle(job.owner)
        job.audio.put_nowait(None)

    def _taken(self, owner: Hashable, taken: int) -> None:
        """The reader took `taken` bytes of `owner`'s PCM: a held owner rejoins the rotation once it is
        under the limit again."""
        ahead = self._listeners.taken(owner, taken)
        if owner in self._held and ahead < AHEAD_LIMIT_BYTES:
            self._held.discard(owner)
            self._rotation.append(owner)
            self._wakeup.set()

    def _forget_if_idle(self, owner: Hashable) -> None:
        if not self._queues.get(owner) and owner not in self._in_flight:
            self._held.discard(owner)
            self._queues.pop(owner, None)
            self._listeners.start(owner)  # what it computed before its cancel, if anything (skipped)
            if self._slots.leave_line(owner):  # it gave up its place: the others move up
                self._tell_places()
            self._wakeup.set()  # its slot may free: `_admit`
            self._listeners.forget_if_played_out(owner)  # played out: its next message starts afresh
            if owner in self._rotation:
                self._rotation.remove(owner)

    def _prepared(self, owner: Hashable) -> bool:
        head = self._queues[owner][0]
        return head.segments is not None or head.text_error is not None or head.cancelled

    async def _next(self) -> list[Job]:
        """The next jobs to run a step of, in flight (`Picker.pick`: one, or a batch)."""
        jobs = self._pick(await self._ready())
        for job in jobs:
            self._rotation.remove(job.owner)
            self._in_flight.add(job.owner)
        return jobs

    def _pick(self, ready: list[Hashable]) -> list[Job]:
        """`Picker.pick`; when it fails (a fault in the scheduler's own figures for some session's job),
        each ready session is picked alone, and the head job of one that fails again fails with that
        error (its client is told, `_settle`), so one bad job never stops the worker and every other
        session's audio with it."""
        try:
            return self._picker.pick(ready)
        except Exception:
            log.exception("picking among %d ready sessions failed; picking each alone", len(ready))
        for owner in ready:
            try:
                return self._picker.pick([owner])
            except Exception as exc:
                job = self._queues[owner][0]
                self._rotation.remove(owner)
                self._release(job, self._settle(job, exc))
        return []

    async def _ready(self) -> list[Hashable]:
        """The sessions in the rotation whose next job's text is prepared, once there are any (in
        rotation order: the longest waiting first)."""
        while True:
            self._admit(time.perf_counter())
            if ready := [o for o in self._rotation if self._prepared(o)]:
                return ready
            self._wakeup.clear()
            frees_at = self._slot_frees_at()
            timeout = None if frees_at is None else max(0.0, frees_at - time.perf_counter()) + 0.001
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)

    def _run_steps(self, jobs: list[Job]) -> list[Outcome]:
        """In a worker thread: the picked jobs' turns (`StepRunner.run_many`)."""
        return self._runner.run_many(jobs)

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            jobs = await self._next()
            if not jobs:  # each ready session's job failed as it was picked (`_pick`)
                continue
            try:
                outcomes = await loop.run_in_executor(self._pool, self._run_steps, jobs)
            except Exception as exc:  # the pool itself failed (shut down): each job fails with it
                outcomes = [exc] * len(jobs)
            for job, outcome in zip(jobs, outcomes, strict=True):
                self._release(job, self._settle(job, outcome))

    def _settle(self, job: Job, outcome: Outcome) -> bool:
        """Hand what the job's turn gave to its listener; whether the job is finished."""
        if isinstance(outcome, SynthesisCancelled):
            return True
        if isinstance(outcome, BaseException):
            log.error("synthesis failed for request %s", job.request.request_id, exc_info=outcome)
            self._listeners.start(job.owner)
            job.audio.put_nowait(outcome)
            job.cancelled = True
            return True
        if job.words is not None and not job.cancelled:
            self._listeners.deliver(job, job.words)
            job.words = None
        if outcome is not None and not job.cancelled:
            self._listeners.deliver(job, outcome)
        return job.cancelled or job.exhausted

    def _lead_done(self, owner: Hashable, job: Job) -> bool:
        """Whether the lead computed so far lets the listener start and never wait for the work left
        (this job's and the session's queued ones: `WindowPlan.follows`, at the speed the last step
        showed when it was slower than planned: `DecodeSpeed.lately`). On an engine faster than real
        time that is the first window (the ramp chose it so); slower, it is most of the answer."""
        queue = self._queues.get(owner) or deque()
        queued = list(queue)[1:] if queue and queue[0] is job else list(queue)
        work = job.work_left() + estimated(queued, self.calibration)
        speed = self.speed
        if not work or speed is None:
            return True
        lead_s = self._listeners.lead_s[owner]
        sharing = self._slots.sharing(self._queues)
        return self.plan.follows(lead_s, work, speed.lately(BUDGET_SHARE), sharing)

    def _release(self, job: Job, finished: bool) -> None:
        owner = job.owner
        self._in_flight.discard(owner)
        queue = self._queues.get(owner)
        if finished and queue and queue[0] is job:
            job.finished = True
            queue.popleft()
            if not job.cancelled:
                self._listeners.deliver(job, None)
        if owner in self._listeners.lead and (job.cancelled or self._lead_done(owner, job)):
            self._listeners.start(owner)
        if queue and self._listeners.ahead.get(owner, 0) >= AHEAD_LIMIT_BYTES:
            self._held.add(owner)  # until its reader takes audio (`_taken`)
        elif queue:
            self._rotation.append(owner)
            self._wakeup.set()
        else:
            self._forget_if_idle(owner)
