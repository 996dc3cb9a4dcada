"""The engine scheduler: one queue of synthesis jobs per session, served round-robin, one decoder step
at a time.

Why: Kokoro has no batching (variable-length durations), so a container serves one forward pass per
worker at a time. Holding a lock for a whole session (the reference design) starves every other
session; here a session with four queued sentences and a session with one both make progress. The unit
of a turn is one step of a segment's frames (`tts/engines/windows.py`: one window, or on a CPU a few windows
decoded side by side; a segment's first turn also runs its text side), so a long sentence in one
session does not hold back another session's first audio, and a cancel takes effect within one step.
Within a session the next step starts the moment the previous one is done (no idle gap while the audio
is being sent). A session has at most one step in flight, which keeps its audio in order even with
several workers.

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

from tts.config import SAMPLE_RATE
from tts.encoders import float_to_pcm16
from tts.engines.base import CancelFlag, RunFlag, SpeechEngine, SynthesisCancelled
from tts.engines.windows import WindowedDecode
from tts.protocol import Synthesize

log = logging.getLogger("tts.scheduler")

# How far one session's synthesis may run ahead of its reader: 10 s of audio, 480,000 bytes of 24 kHz
# s16le PCM, plus the one step in flight (with the default window plan a step is at most 120 frames
# plus a remainder under half a step: 4.5 s, 216 kB; with windowing off, a whole segment, up to ~30 s).
# Why 10 s: a client playing at real time needs the next step computed before the current one has
# played (one step, up to 4.5 s, ahead), and a pacing sender (TTS_SEND_AHEAD_MS, 0.5 s in the tests)
# keeps its lead on top; 10 s covers both twice over, so a client that reads never waits on the
# bound, while one that stops reading holds under 1 MB of PCM in the container instead of its whole
# queue (45 s of audio and +217 MB measured without the bound) and no longer takes engine turns.
AHEAD_LIMIT_S = 10.0
AHEAD_LIMIT_BYTES = int(AHEAD_LIMIT_S * SAMPLE_RATE) * 2


class AudioQueue(asyncio.Queue[bytes | BaseException | None]):
    """A job's PCM, one item per decoder step: counts the PCM bytes computed and not yet taken, and
    calls `on_taken(bytes)` whenever its reader takes some (the scheduler's backpressure)."""

    def __init__(self) -> None:
        super().__init__()
        self.pcm_bytes = 0
        self.on_taken: Callable[[int], None] | None = None

    # `_put` and `_get` are asyncio.Queue's hooks for subclasses (as PriorityQueue uses them), so the
    # count holds for every way of putting and getting.
    def _put(self, item: bytes | BaseException | None) -> None:
        if isinstance(item, bytes):
            self.pcm_bytes += len(item)
        super()._put(item)

    def _get(self) -> bytes | BaseException | None:
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
    segments: list[list[int]] | None = None
    segment_count: int = 0
    windows: WindowedDecode | None = None
    submitted_at: float = field(default_factory=time.perf_counter)
    run_options: RunFlag = field(default_factory=CancelFlag)


class Scheduler:
    def __init__(self, engine: SpeechEngine, workers: int = 1) -> None:
        self._engine = engine
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kokoro")
        self._queues: dict[Hashable, deque[Job]] = {}
        self._rotation: deque[Hashable] = deque()
        self._in_flight: set[Hashable] = set()
        self._ahead: dict[Hashable, int] = {}  # per owner: PCM bytes computed and not yet taken
        self._held: set[Hashable] = set()  # owners left out of the rotation: AHEAD_LIMIT_BYTES ahead
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

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    @property
    def ahead_bytes(self) -> dict[Hashable, int]:
        """Per owner with any: PCM bytes computed that its reader has not taken yet (a snapshot)."""
        return dict(self._ahead)

    def submit(self, owner: Hashable, request: Synthesize) -> Job:
        job = Job(owner=owner, request=request, run_options=self._engine.run_flag())
        job.audio.on_taken = lambda taken: self._taken(owner, taken)
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
            if owner in self._rotation:
                self._rotation.remove(owner)

    async def _next(self) -> Job:
        while not self._rotation:
            self._wakeup.clear()
            await self._wakeup.wait()
        owner = self._rotation.popleft()
        self._in_flight.add(owner)
        return self._queues[owner][0]

    def _run_step(self, job: Job) -> bytes | None:
        """In a worker thread: G2P on the job's first turn, the text side on a segment's first turn,
        then one decoder step."""
        request = job.request
        if job.segments is None:
            job.segments = self._engine.segments(request.text, request.lang)
            job.segment_count = len(job.segments)
        if job.cancelled:
            return None
        if job.windows is None or job.windows.done:
            if not job.segments:
                return None
            tokens = job.segments.pop(0)
            features = self._engine.features(tokens, request.voice, request.speed, job.run_options)
            job.windows = self._engine.windowed(features, job.run_options)
        return float_to_pcm16(job.windows.next())

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
                if pcm is not None and not job.cancelled:
                    self._ahead[job.owner] = self._ahead.get(job.owner, 0) + len(pcm)
                    job.audio.put_nowait(pcm)
                finished = job.cancelled or self._exhausted(job)
            except SynthesisCancelled:
                finished = True
            except Exception as exc:
                log.exception("synthesis failed for request %s", job.request.request_id)
                job.audio.put_nowait(exc)
                job.cancelled = True
                finished = True
            self._release(job, finished)

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
