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

Policy (deadlines). Each session has a listener, modelled as a player that starts at the session's
first audio and plays at real time: it runs out of audio at `runs_out_at` (the first audio's time plus
the audio computed since, restarted from the moment of any step that came too late). The deadline of a
session's next step is that moment; a session whose listener has nothing to play yet (a new session, or
one whose last answer has played out) gets its first-audio target instead, its head job's arrival plus
FIRST_AUDIO_TARGET_S, plus one shortest step for each listener already playing (a late first audio is a
longer wait before speech; a playing listener's gap is a stutter in it). Every turn the worker takes
the session with the earliest deadline (ties: the one waiting longest). Sessions far ahead of their
listeners have late deadlines, so they yield to every session closer to a gap, and run only when nobody
nearer needs the engine. The step itself is sized to the time left (`WindowPlan.step`): the chosen
session's slack, and no more than each other waiting session's slack divided by its place in the
deadline order (the k-th must see k steps done before its own listener runs out), so one long step
cannot make the next session stall; a listener that will wait whatever the step gets the fixed plan's
step instead (the most audio per second of decoding). A step that begins a segment first runs its
text side, and the decoder gets what is left of the budget.
A session's first window is the configured one, stretched (up to four times: FIRST_STRETCH) until its
audio outlasts one turn of every other session with work (a playing one's shortest step, a new one's
first turn: text side and first window, timed as they run) and its own next step.
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
- Saturation: `load` counts the sessions with audio to compute and the sessions the engine can
  keep gap-free (`capacity`, from the measured decoder speed: CAPACITY_SHARE of the audio seconds a
  full-size step computes per second). While started sessions with work fill the capacity, a new
  session's first-audio deadline moves SATURATED_WAIT_S later: new sessions wait longer for first audio rather
  than every listener stalling, and none waits without bound. `/ping` reports `load`.

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
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from facts import PCM_BYTES_PER_S
from tts.engines.base import CancelFlag, RunFlag, SpeechEngine, SynthesisCancelled
from tts.engines.decode import FRAME_S
from tts.scheduling.plan import MIN_STEP_FRAMES, WindowPlan
from tts.scheduling.speed import SPEED_SMOOTHING, DecodeSpeed
from tts.scheduling.steps import WindowedDecode, windowed
from tts.text.timings import TimedWords, WordTokens
from tts.wire.audio import float_to_pcm16, pcm_seconds
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
# A new session's first audio is due this long after its message (issue 27's target for a 20-word
# first sentence on a 2-core CPU: the text side ~160 ms plus the 12-frame first window ~150 ms).
FIRST_AUDIO_TARGET_S = 0.4
# Saturated, a new session's first-audio deadline moves this much later: it then comes after every
# playing listener with less than that buffered, and is still served within it (no starvation). About
# one sentence of an answer, so that a playing session can finish its answer before the new one starts.
SATURATED_WAIT_S = 4.0
# The share of the engine's full-speed audio rate that keeps listeners gap-free: the rest is the text
# side, the short first windows of every sentence and the event loop. Measured (`python -m benchmarks
# playback`, BENCHMARKS.md "Playback", 2 shared cores): two or three sessions kept (nearly) gap-free,
# four all stalling 4-5 s, while a full-size step computed 5-5.7 s of audio a second; 0.6 of that
# claims 3. At 0.7 the claim read 4 when the fourth session came, and all four stalled together.
CAPACITY_SHARE = 0.6


# Threads that prepare jobs' text (G2P, word mapping): see "Text work" above. The mapping is pure Python
# and shares the interpreter with the rest, so more threads would only split the same time finer; four
# keep three sessions' short requests from queueing behind one adversarial one.
TEXT_WORKERS = 4


class AudioQueue(asyncio.Queue[bytes | TimedWords | BaseException | None]):
    """A job's PCM, one item per decoder step (each segment's words before its first step when the
    request asked for timestamps): counts the PCM bytes computed and not yet taken, and
    calls `on_taken(bytes)` whenever its reader takes some (the scheduler's backpressure)."""

    def __init__(self) -> None:
        super().__init__()
        self.pcm_bytes = 0
        self.on_taken: Callable[[int], None] | None = None

    # `_put` and `_get` are asyncio.Queue's hooks for subclasses (as PriorityQueue uses them), so the
    # count holds for every way of putting and getting.
    def _put(self, item: bytes | TimedWords | BaseException | None) -> None:
        if isinstance(item, bytes):
            self.pcm_bytes += len(item)
        super()._put(item)

    def _get(self) -> bytes | TimedWords | BaseException | None:
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
    segments: list[list[int]] | None = None  # set by the text worker: the job can take engine turns
    text_error: BaseException | None = None  # what the text worker raised, reported at the job's turn
    segment_count: int = 0
    windows: WindowedDecode | None = None
    word_tokens: list[WordTokens] = field(default_factory=list)  # per segment to come, with timestamps
    words: TimedWords | None = None  # the segment just started: put on `audio` before its first step
    samples: int = 0  # audio computed so far: where the next segment's words start
    submitted_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None  # a worker first took it up: its wait in the queue ends
    run_options: RunFlag = field(default_factory=CancelFlag)
    budget_s: float | None = None  # the time its next step may take (set by the scheduler each turn)
    cover_s: float = 0.0  # a first window's audio must last this long (set with `budget_s`)


class Scheduler:
    def __init__(
        self, engine: SpeechEngine, plan: WindowPlan, speed: DecodeSpeed | None = None, workers: int = 1
    ) -> None:
        self._engine = engine
        self.plan = plan
        self.speed = speed  # None: not measured, so no step is sized and no capacity claimed
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kokoro")
        self._text_pool = ThreadPoolExecutor(max_workers=TEXT_WORKERS, thread_name_prefix="kokoro-text")
        self._queues: dict[Hashable, deque[Job]] = {}
        self._rotation: deque[Hashable] = deque()
        self._in_flight: set[Hashable] = set()
        self._ahead: dict[Hashable, int] = {}  # per owner: PCM bytes computed and not yet taken
        self._held: set[Hashable] = set()  # owners left out of the rotation: AHEAD_LIMIT_BYTES ahead
        self._runs_out_at: dict[Hashable, float] = {}  # per owner: when its listener runs out of audio
        self._text_side_s: float | None = None  # a segment's text side (and G2P), as timed so far
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
        """For `/ping`: the sessions with audio to compute, the sessions the engine can keep gap-free
        (None until the decoder speed is measured), and whether the first are more than the second."""
        capacity = self.capacity
        return {
            "sessions": len(self._queues),
            "capacity": capacity,
            "saturated": capacity is not None and len(self._queues) > capacity,
        }

    @property
    def capacity(self) -> int | None:
        """Sessions the engine keeps gap-free: CAPACITY_SHARE of the audio seconds per second that a
        full-size step computes, by the decoder speed measured at load and updated since."""
        speed = self.speed
        if speed is None:
            return None
        plan = self.plan
        frames = 1_000_000  # a step well inside a long segment: the plan's largest
        step = plan.step(plan.max_frames, 8, frames)
        decoded = [stop - start + 2 * plan.context_frames for start, stop in step]
        rate = (step[-1][1] - step[0][0]) * FRAME_S / speed.seconds(decoded)
        return max(1, int(rate * CAPACITY_SHARE))

    def submit(self, owner: Hashable, request: Synthesize) -> Job:
        job = Job(owner=owner, request=request, run_options=self._engine.run_flag())
        job.audio.on_taken = lambda taken: self._taken(owner, taken)
        prepared = asyncio.get_running_loop().run_in_executor(self._text_pool, self._prepare_text, job)
        prepared.add_done_callback(lambda _: self._wakeup.set())
        self._queues.setdefault(owner, deque()).append(job)
        if owner not in self._in_flight and owner not in self._rotation and owner not in self._held:
            self._rotation.append(owner)
        self._wakeup.set()
        return job

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
            if self._runs_out_at.get(owner, 0.0) <= time.perf_counter():
                self._runs_out_at.pop(owner, None)  # played out: its next message starts afresh
            if owner in self._rotation:
                self._rotation.remove(owner)

    def _deadline(self, owner: Hashable, now: float, started: int) -> float:
        """When `owner`'s listener runs out of audio; for one with nothing to play yet, its first-audio
        target (later while the `started` sessions, playing or stalled, fill the capacity)."""
        head = self._queues[owner][0]
        runs_out_at = self._runs_out_at.get(owner)
        if runs_out_at is not None and runs_out_at > head.submitted_at:
            return runs_out_at
        others = started - (owner in self._runs_out_at)
        capacity = self.capacity
        if capacity is not None and others >= capacity:
            wait = SATURATED_WAIT_S
        else:  # one shortest step of each playing listener first: a late first audio is not a gap
            wait = others * self._shortest_step_s()
        return head.submitted_at + FIRST_AUDIO_TARGET_S + wait

    def _prepared(self, owner: Hashable) -> bool:
        head = self._queues[owner][0]
        return head.segments is not None or head.text_error is not None or head.cancelled

    async def _next(self) -> Job:
        while not (ready := [o for o in self._rotation if self._prepared(o)]):
            self._wakeup.clear()
            await self._wakeup.wait()
        now = time.perf_counter()
        self._runs_out_at = {o: t for o, t in self._runs_out_at.items() if t > now or o in self._queues}
        # Started sessions with work to do, playing or stalled: each needs the engine at real time. (One
        # whose work is done is not counted, though its listener may still be playing: a closed session
        # looks the same from here.)
        started = sum(1 for owner in self._runs_out_at if owner in self._queues)
        deadlines = sorted(
            ((self._deadline(o, now, started), n, o) for n, o in enumerate(ready)),
            key=lambda entry: entry[:2],
        )
        deadline, _, owner = deadlines[0]
        self._rotation.remove(owner)
        self._in_flight.add(owner)
        job = self._queues[owner][0]
        playing = owner in self._runs_out_at and deadline == self._runs_out_at[owner]
        # The k-th most urgent session must see k steps done before its listener runs out.
        job.budget_s = (
            max(0.0, min((d - now) / rank for rank, (d, *_) in enumerate(deadlines, 1))) if playing else None
        )
        job.cover_s = 0.0 if playing else self._cover_s(owner, [o for *_, o in deadlines])
        return job

    def _cover_s(self, owner: Hashable, waiting: list[Hashable]) -> float:
        """How long `owner`'s first window must last: until its next step can be done, after one turn of
        every other session with work (a started one's shortest step; a new one's first turn, its text
        side and first window, which at 0.3 s on 2 cores is half as long again as a shortest step) and
        then its own."""
        shortest = self._shortest_step_s()
        others = [o for o in waiting if o != owner] + [o for o in self._in_flight if o != owner]
        return shortest + sum(shortest if o in self._runs_out_at else self._first_turn_s() for o in others)

    def _shortest_step_s(self) -> float:
        """Predicted time of a budgeted step at its floor (MIN_STEP_FRAMES and its context)."""
        speed = self.speed
        if speed is None:
            return 0.0
        return speed.seconds([MIN_STEP_FRAMES + 2 * self.plan.context_frames])

    def _first_turn_s(self) -> float:
        """Predicted time of a segment's first turn: its text side and its first window."""
        speed = self.speed
        if speed is None:
            return 0.0
        plan = self.plan
        return (self._text_side_s or 0.0) + speed.seconds([plan.first_frames + 2 * plan.context_frames])

    def _prepare_text(self, job: Job) -> None:
        """In the text worker: the job's G2P, and with timestamps the mapping of its written words;
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
        if job.windows is None or job.windows.done:
            if not job.segments:
                return None
            tokens = job.segments.pop(0)
            features = self._engine.features(tokens, request.voice, request.speed, job.run_options)
            job.windows = windowed(self._engine, features, self.plan, self.speed, job.run_options)
            if job.word_tokens:
                job.words = job.word_tokens.pop(0).times(features.durations, job.samples)
            spent = time.perf_counter() - started
            last = self._text_side_s
            self._text_side_s = spent if last is None else last + SPEED_SMOOTHING * (spent - last)
        budget = job.budget_s
        if budget is not None:
            budget = max(0.0, budget - (time.perf_counter() - started))
        audio = job.windows.next(budget, job.cover_s)
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
                    job.audio.put_nowait(job.words)
                    job.words = None
                if pcm is not None and not job.cancelled:
                    self._ahead[job.owner] = self._ahead.get(job.owner, 0) + len(pcm)
                    job.audio.put_nowait(pcm)
                    self._played(job.owner, pcm_seconds(len(pcm)))
                finished = job.cancelled or self._exhausted(job)
            except SynthesisCancelled:
                finished = True
            except Exception as exc:
                log.exception("synthesis failed for request %s", job.request.request_id)
                job.audio.put_nowait(exc)
                job.cancelled = True
                finished = True
            self._release(job, finished)

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
                job.audio.put_nowait(None)
        if queue and self._ahead.get(owner, 0) >= AHEAD_LIMIT_BYTES:
            self._held.add(owner)  # until its reader takes audio (`_taken`)
        elif queue:
            self._rotation.append(owner)
            self._wakeup.set()
        else:
            self._forget_if_idle(owner)
