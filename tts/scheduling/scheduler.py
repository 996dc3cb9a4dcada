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

Policy (deadlines: `deadlines.py`). Every turn the worker takes the session with the earliest deadline
(ties: the one waiting longest): a playing listener's is when it runs out of audio, a new session's when
its first turn would be done. Sessions far ahead of their listeners have late deadlines, so they yield
to every session closer to a gap, and run only when nobody nearer needs the engine. The step itself is
sized to the time left (`WindowPlan.step`, `deadlines.budget`); a listener that will wait whatever the
step gets the fixed plan's step instead (the most audio per second of decoding). A step that begins a
segment first runs its text side, and the decoder gets what is left of the budget. A session's first
window is the ramp's (`WindowPlan.first_window`) for the sessions admitted with work: the shortest
that the steps after it can follow, each computed while the audio before it plays.
- No starvation: a waiting session's deadline stays where it is, while every step served moves the
  served session's deadline later by the audio it computed (a step after which the listener would
  already have run out restarts it from now), so every waiting session reaches the front.
- Cancel is unchanged: it drops queued jobs, terminates the running pass through the job's run flag,
  and the sender stops at the next frame.
- Text work is not an engine turn. A job's G2P (and, with timestamps, its word mapping: 0.9 s for a
  4,000-character URL on 2 cores, against 31 ms for its G2P) runs in the text workers, beside the
  decoder workers, from the moment the job is submitted; a session whose next job is still being
  prepared is passed over until it is ready, so one user's long text never holds back another's first
  audio. TEXT_WORKERS threads, so that a short request waits behind a long one only when that many long
  ones came before it (espeak-ng itself is called under one lock: `tts/text/g2p.py`).
- Admission (`admission.py`): the calibration (`calibration.py`) says how many sessions the engine keeps
  gap-free (`capacity`; TTS_CAPACITY sets it instead). A session holds its slot from its first message
  until its listener has played out all it was sent, or, once it sends no more (`closed`: its WebSocket
  closed, a one-shot POST), until its work is computed; while the slots are full, a new session waits
  in line, told its place (`Queued` on its audio queue), and is admitted first in line when a slot
  frees; past `max_waiting(capacity)` it is refused (`EngineBusy`). `/ping` reports `load`.

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
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from facts import PCM_BYTES_PER_S
from tts.engines.base import CancelFlag, RunFlag, SpeechEngine, SynthesisCancelled
from tts.scheduling import deadlines
from tts.scheduling.admission import SENTENCE_TOKENS, EngineBusy, Queued, capacity, max_waiting
from tts.scheduling.calibration import Calibration
from tts.scheduling.pauses import Breaks
from tts.scheduling.plan import BUDGET_SHARE, MIN_STEP_FRAMES, WindowPlan, Work
from tts.scheduling.steps import WindowedDecode, windowed
from tts.text.script import Segment
from tts.text.timings import TimedWords
from tts.wire.audio import float_to_pcm16, pcm_seconds
from tts.wire.protocol import MAX_SPEED, MIN_SPEED, Synthesize

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
AudioItem = bytes | TimedWords | Queued | BaseException | None


# Threads that prepare jobs' text (G2P, word mapping): see "Text work" above. The mapping is pure Python
# and shares the interpreter with the rest, so more threads would only split the same time finer; four
# keep three sessions' short requests from queueing behind one adversarial one.
TEXT_WORKERS = 4


class AudioQueue(asyncio.Queue[AudioItem]):
    """A job's PCM, one item per decoder step (each segment's words before its first step when the
    request asked for timestamps; its place in line while its session waits for a slot): counts the
    PCM bytes computed and not yet taken, and
    calls `on_taken(bytes)` whenever its reader takes some (the scheduler's backpressure)."""

    def __init__(self) -> None:
        super().__init__()
        self.pcm_bytes = 0
        self.on_taken: Callable[[int], None] | None = None

    # `_put` and `_get` are asyncio.Queue's hooks for subclasses (as PriorityQueue uses them), so the
    # count holds for every way of putting and getting.
    def _put(self, item: AudioItem) -> None:
        if isinstance(item, bytes):
            self.pcm_bytes += len(item)
        super()._put(item)

    def _get(self) -> AudioItem:
        item = super()._get()
        if isinstance(item, bytes):
            self.pcm_bytes -= len(item)
            if self.on_taken is not None:
                self.on_taken(len(item))
        return item


@dataclass(eq=False)
class Job:
    """One synthesize message. Its PCM arrives on `audio`, one item per decoder step, then `None`
    (or an exception when synthesis failed)."""

    owner: Hashable
    request: Synthesize
    audio: AudioQueue = field(default_factory=AudioQueue)
    cancelled: bool = False
    finished: bool = False
    segments: list[Segment] | None = None  # set by the text worker: the job can take engine turns
    text_error: BaseException | None = None  # what the text worker raised, reported at the job's turn
    segment_count: int = 0
    windows: WindowedDecode | None = None
    breaks: Breaks = field(default_factory=Breaks)  # the silence of SSML breaks between its segments
    words: TimedWords | None = None  # the segment just started: put on `audio` before its first step
    samples: int = 0  # audio computed so far: where the next segment's words start
    submitted_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None  # a worker first took it up: its wait in the queue ends
    run_options: RunFlag = field(default_factory=CancelFlag)
    budget_s: float | None = None  # the time its next step may take (set by the scheduler each turn)
    sharing: int = 1  # sessions admitted with work, this one included (set with `budget_s`)
    lead_s: float | None = None  # the audio computed for its listener not yet started (set with `budget_s`)
    position: int | None = None  # its place in line, as last told (None: its session is admitted)
    later_segments: list[Work] = field(default_factory=list)  # its segments after the one being decoded
    later_jobs: list[Work] = field(default_factory=list)  # the session's queued jobs (set each turn)


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
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kokoro")
        self._text_pool = ThreadPoolExecutor(max_workers=TEXT_WORKERS, thread_name_prefix="kokoro-text")
        self._queues: dict[Hashable, deque[Job]] = {}
        self._rotation: deque[Hashable] = deque()
        self._in_flight: set[Hashable] = set()
        self._ahead: dict[Hashable, int] = {}  # per owner: PCM bytes computed and not yet taken
        self._held: set[Hashable] = set()  # owners left out of the rotation: AHEAD_LIMIT_BYTES ahead
        self._runs_out_at: dict[Hashable, float] = {}  # per owner: when its listener runs out of audio
        self._admitted: set[Hashable] = set()  # owners holding a slot (all of them without a calibration)
        self._waiting: deque[Hashable] = deque()  # owners in line for a slot, first come first
        self._closed: set[Hashable] = set()  # owners that send nothing more (`closed`)
        self._capacity: tuple[float, int] | None = None  # (when computed, capacity)
        self._fixed_capacity = capacity  # TTS_CAPACITY: the operator's figure; 0: the calibration's
        # Per owner whose listener has not started: the audio computed so far, kept back until it lets
        # the listener play the rest without a gap (`_lead_done`), and its seconds.
        self._lead: dict[Hashable, list[tuple[Job, bytes | TimedWords | None]]] = {}
        self._lead_s: dict[Hashable, float] = {}
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
        return dict(self._ahead)

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
            "waiting": len(self._waiting),
            "calibration": None
            if calibration is None
            else calibration.summary() | {"capacity": self.calibrated_capacity},
        }

    @property
    def capacity(self) -> int | None:
        """Sessions this replica admits at once: TTS_CAPACITY where the operator set it (say, from
        `python -m benchmarks capacity`), else `calibrated_capacity`."""
        return self._fixed_capacity or self.calibrated_capacity

    @property
    def calibrated_capacity(self) -> int | None:
        """Sessions the engine keeps gap-free (`admission.capacity`) by the calibration as it stands,
        recomputed at most once a second (it follows every timed step)."""
        if self.calibration is None:
            return None
        now = time.perf_counter()
        if self._capacity is None or now - self._capacity[0] > 1.0:
            self._capacity = (now, capacity(self.plan, self.calibration))
        return self._capacity[1]

    def submit(self, owner: Hashable, request: Synthesize) -> Job:
        job = Job(owner=owner, request=request, run_options=self._engine.run_flag())
        job.audio.on_taken = lambda taken: self._taken(owner, taken)
        if owner not in self._admitted and owner not in self._waiting:
            capacity = self.capacity
            if capacity is None or (len(self._admitted) < capacity and not self._waiting):
                self._admitted.add(owner)
            elif len(self._waiting) >= max_waiting(capacity):
                job.finished = True
                job.audio.put_nowait(
                    EngineBusy(f"all {capacity} slots busy and {len(self._waiting)} sessions waiting")
                )
                return job
            else:
                self._waiting.append(owner)
        prepared = asyncio.get_running_loop().run_in_executor(self._text_pool, self._prepare_text, job)
        prepared.add_done_callback(lambda _: self._wakeup.set())
        self._queues.setdefault(owner, deque()).append(job)
        if owner in self._waiting:
            self._tell_places()
        elif owner not in self._in_flight and owner not in self._rotation and owner not in self._held:
            self._rotation.append(owner)
        self._wakeup.set()
        return job

    def _tell_places(self) -> None:
        """Each waiting session's head job hears its place in line whenever it changes."""
        for position, owner in enumerate(self._waiting, 1):
            head = self._queues[owner][0]
            if head.position != position:
                head.position = position
                head.audio.put_nowait(Queued(position))

    def closed(self, owner: Hashable) -> None:
        """`owner` sends no more (its session closed; a one-shot request): its slot frees once its
        work is computed, without waiting for its listener to play it out."""
        if owner in self._admitted or owner in self._waiting:
            self._closed.add(owner)
            self._wakeup.set()

    def _admit(self, now: float) -> None:
        """Free the slots of the sessions with nothing queued or in flight whose listeners have played
        out all they were sent, or which send no more (`closed`), then admit the first in line while
        slots are free."""
        for owner in list(self._admitted):
            idle = owner not in self._queues and owner not in self._in_flight
            if idle and (owner in self._closed or self._runs_out_at.get(owner, 0.0) <= now):
                self._admitted.discard(owner)
                self._closed.discard(owner)
        capacity = self.capacity
        admitted = False
        while self._waiting and (capacity is None or len(self._admitted) < capacity):
            owner = self._waiting.popleft()
            self._admitted.add(owner)
            for job in self._queues[owner]:
                job.position = None
            self._rotation.append(owner)
            admitted = True
        if admitted:
            self._tell_places()

    def _slot_frees_at(self) -> float | None:
        """When the next slot frees by itself (a listener playing out its last audio), if anyone waits."""
        if not self._waiting:
            return None
        idle = [self._runs_out_at.get(o, 0.0) for o in self._admitted if o not in self._queues]
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
        ahead = self._ahead.pop(owner, 0) - taken
        if ahead > 0:
            self._ahead[owner] = ahead
        if owner in self._held and ahead < AHEAD_LIMIT_BYTES:
            self._held.discard(owner)
            self._rotation.append(owner)
            self._wakeup.set()

    def _forget_if_idle(self, owner: Hashable) -> None:
        if not self._queues.get(owner) and owner not in self._in_flight:
            self._held.discard(owner)
            self._queues.pop(owner, None)
            self._start_listener(owner)  # what it computed before its cancel, if anything (skipped)
            if owner in self._waiting:  # it gave up its place: the others move up
                self._waiting.remove(owner)
                self._closed.discard(owner)
                self._tell_places()
            self._wakeup.set()  # its slot may free: `_admit`
            if self._runs_out_at.get(owner, 0.0) <= time.perf_counter():
                self._runs_out_at.pop(owner, None)  # played out: its next message starts afresh
            if owner in self._rotation:
                self._rotation.remove(owner)

    def _deadline(self, owner: Hashable, started: int) -> float:
        """When `owner`'s listener runs out of audio; for one with nothing to play yet, when its first
        turn would be done after one shortest step of each other `started` session."""
        head = self._queues[owner][0]
        runs_out_at = self._runs_out_at.get(owner)
        if runs_out_at is not None and runs_out_at > head.submitted_at:
            return runs_out_at
        others = started - (owner in self._runs_out_at)
        return deadlines.first_audio_due(
            head.submitted_at, self._first_turn_s(), others, self._shortest_step_s()
        )

    def _prepared(self, owner: Hashable) -> bool:
        head = self._queues[owner][0]
        return head.segments is not None or head.text_error is not None or head.cancelled

    async def _next(self) -> Job:
        while True:
            self._admit(time.perf_counter())
            if ready := [o for o in self._rotation if self._prepared(o)]:
                break
            self._wakeup.clear()
            frees_at = self._slot_frees_at()
            timeout = None if frees_at is None else max(0.0, frees_at - time.perf_counter()) + 0.001
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
        now = time.perf_counter()
        self._runs_out_at = {o: t for o, t in self._runs_out_at.items() if t > now or o in self._queues}
        # Started sessions with work to do, playing or stalled: each needs the engine at real time. (One
        # whose work is done is not counted, though its listener may still be playing: a closed session
        # looks the same from here.)
        started = sum(1 for owner in self._runs_out_at if owner in self._queues)
        order = sorted(
            ((self._deadline(o, started), n, o) for n, o in enumerate(ready)),
            key=lambda entry: entry[:2],
        )
        deadline, _, owner = order[0]
        self._rotation.remove(owner)
        self._in_flight.add(owner)
        job = self._queues[owner][0]
        playing = owner in self._runs_out_at and deadline == self._runs_out_at[owner]
        job.budget_s = deadlines.budget(now, [due for due, *_ in order]) if playing else None
        job.sharing = max(1, sum(1 for o in self._admitted if o in self._queues))
        job.later_jobs = self._estimated(list(self._queues[owner])[1:])
        if owner not in self._runs_out_at and owner not in self._lead and self.calibration is not None:
            self._lead[owner], self._lead_s[owner] = [], 0.0
        job.lead_s = self._lead_s.get(owner)
        return job

    def _shortest_step_s(self) -> float:
        """Predicted time of a budgeted step at its floor (MIN_STEP_FRAMES and its context)."""
        speed = self.speed
        if speed is None:
            return 0.0
        return speed.seconds([MIN_STEP_FRAMES + 2 * self.plan.context_frames])

    def _first_turn_s(self) -> float:
        """Predicted time of a sentence's first turn alone on the engine: its text side and first
        window (the configured one: the shortest the ramp gives)."""
        calibration = self.calibration
        if calibration is None:
            return 0.0
        plan = self.plan
        return calibration.text.seconds(SENTENCE_TOKENS) + calibration.decode.seconds(
            [plan.first_frames + plan.context_frames]
        )

    def _prepare_text(self, job: Job) -> None:
        """In the text worker: the job's G2P, and with timestamps the mapping of its written words;
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

    def _run_step(self, job: Job) -> bytes | None:
        """In a worker thread: the text side on a segment's first turn, then one decoder step, sized
        to what is left of the budget once the text side has run (the job's G2P is the text worker's:
        `_prepare_text`)."""
        started = time.perf_counter()
        if job.started_at is None:
            job.started_at = started
        if job.text_error is not None:
            raise job.text_error
        request = job.request
        if job.cancelled or job.segments is None:
            return None
        segment = None
        if job.windows is None or job.windows.done:
            if not job.segments:
                return None
            segment = job.segments.pop(0)
            if not segment.tokens:  # a break at the end: its silence alone
                return self._audio(job, job.breaks.start(segment.pause_ms, np.zeros(0, np.float32))[0])
            began = time.perf_counter()
            speed = min(max(request.speed * segment.rate, MIN_SPEED), MAX_SPEED)
            features = self._engine.features(list(segment.tokens), request.voice, speed, job.run_options)
            calibration = self.calibration
            if calibration is not None:
                calibration.text.observe(len(segment.tokens), time.perf_counter() - began)
                job.later_segments = [
                    Work(calibration.frames(len(s.tokens) + 2), calibration.text.seconds(len(s.tokens)))
                    for s in job.segments
                ]
            job.windows = windowed(self._engine, features, self.plan, self.speed, job.run_options)
        budget = job.budget_s
        if budget is not None:
            budget = max(0.0, budget - (time.perf_counter() - started))
        audio = job.windows.next(budget, job.sharing, job.later_segments + job.later_jobs, job.lead_s)
        if segment is not None and segment.pause_ms:  # its first step after a break: the break's silence
            pause, cut = job.breaks.start(segment.pause_ms, audio)
            audio = np.concatenate([pause, audio[cut:]])
            offset = len(pause) - cut
        else:
            offset = 0
        if segment is not None and segment.words is not None:  # its words, after the break
            job.words = segment.words.times(features.durations, job.samples + offset)
        if job.windows.done and job.segments and job.segments[0].pause_ms:
            audio = job.breaks.end(audio)
        return self._audio(job, audio)

    @staticmethod
    def _audio(job: Job, audio: np.ndarray) -> bytes:
        job.samples += len(audio)
        return float_to_pcm16(audio)

    @staticmethod
    def _exhausted(job: Job) -> bool:
        return not job.segments and (job.windows is None or job.windows.done)

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = await self._next()
            finished = False
            try:
                pcm = await loop.run_in_executor(self._pool, self._run_step, job)
                if job.words is not None and not job.cancelled:
                    self._deliver(job, job.words)
                    job.words = None
                if pcm is not None and not job.cancelled:
                    self._deliver(job, pcm)
                finished = job.cancelled or self._exhausted(job)
            except SynthesisCancelled:
                finished = True
            except Exception as exc:
                log.exception("synthesis failed for request %s", job.request.request_id)
                self._start_listener(job.owner)
                job.audio.put_nowait(exc)
                job.cancelled = True
                finished = True
            self._release(job, finished)

    def _deliver(self, job: Job, item: bytes | TimedWords | None) -> None:
        """Hand `item` to the job's reader, or, while its listener has not started, keep it in the lead
        (the audio computed before the listener starts: `_lead_done`)."""
        lead = self._lead.get(job.owner)
        if lead is not None:
            lead.append((job, item))
            if isinstance(item, bytes):
                self._lead_s[job.owner] += pcm_seconds(len(item))
            return
        if isinstance(item, bytes):
            self._ahead[job.owner] = self._ahead.get(job.owner, 0) + len(item)
            job.audio.put_nowait(item)
            self._played(job.owner, pcm_seconds(len(item)))
        else:
            job.audio.put_nowait(item)

    def _lead_done(self, owner: Hashable, job: Job) -> bool:
        """Whether the lead computed so far lets the listener start and never wait for the work left
        (this job's and the session's queued ones: `WindowPlan.follows`, at the speed the last step
        showed when it was slower than planned: `DecodeSpeed.lately`). On an engine faster than real
        time that is the first window (the ramp chose it so); slower, it is most of the answer."""
        queue = self._queues.get(owner) or deque()
        work: list[Work] = []
        if not job.finished:
            if job.windows is not None and not job.windows.done:
                work.append(job.windows.remaining)
            work += job.later_segments
        work += self._estimated(list(queue)[1:] if queue and queue[0] is job else list(queue))
        speed = self.speed
        if not work or speed is None:
            return True
        sharing = max(1, sum(1 for o in self._admitted if o in self._queues))
        return self.plan.follows(self._lead_s[owner], work, speed.lately(BUDGET_SHARE), sharing)

    def _start_listener(self, owner: Hashable) -> None:
        """Release the lead to the readers: the listener starts now with all of it."""
        lead, seconds = self._lead.pop(owner, None), self._lead_s.pop(owner, 0.0)
        if lead is None:
            return
        for job, item in lead:
            if job.cancelled:
                continue
            if isinstance(item, bytes):
                self._ahead[owner] = self._ahead.get(owner, 0) + len(item)
            job.audio.put_nowait(item)
        if seconds:
            self._played(owner, seconds)

    def _estimated(self, jobs: list[Job]) -> list[Work]:
        """Queued jobs as the ramp sees them: their segments' tokens once their text is prepared."""
        calibration = self.calibration
        if calibration is None:
            return []
        work = []
        for job in jobs:
            if job.segments is None:  # its text worker has not finished: its characters' typical tokens
                counts = [round(len(job.request.text) * calibration.tokens_per_char)]
            else:
                counts = [len(segment.tokens) for segment in job.segments]
            work += [Work(calibration.frames(count + 2), calibration.text.seconds(count)) for count in counts]
        return work

    def _played(self, owner: Hashable, seconds: float) -> None:
        """`seconds` more audio for `owner`'s listener, who plays from now if it had run out."""
        self._runs_out_at[owner] = max(self._runs_out_at.get(owner, 0.0), time.perf_counter()) + seconds

    def _release(self, job: Job, finished: bool) -> None:
        owner = job.owner
        self._in_flight.discard(owner)
        queue = self._queues.get(owner)
        if finished and queue and queue[0] is job:
            job.finished = True
            queue.popleft()
            if not job.cancelled:
                self._deliver(job, None)
        if owner in self._lead and (job.cancelled or self._lead_done(owner, job)):
            self._start_listener(owner)
        if queue and self._ahead.get(owner, 0) >= AHEAD_LIMIT_BYTES:
            self._held.add(owner)  # until its reader takes audio (`_taken`)
        elif queue:
            self._rotation.append(owner)
            self._wakeup.set()
        else:
            self._forget_if_idle(owner)
