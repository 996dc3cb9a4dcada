"""What the scheduler serves: a job (one synthesize message), the queue its audio arrives on, and the
work still to come as the ramp sees it (`WindowPlan.follows` and `WindowPlan.step` plan with it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from tts.engines.base import CancelFlag, Features, RunFlag
from tts.scheduling.admission import Queued
from tts.scheduling.calibration import Calibration
from tts.scheduling.pauses import Breaks
from tts.scheduling.plan import Work
from tts.scheduling.steps import WindowedDecode
from tts.text.script import Segment
from tts.text.timings import TimedWords
from tts.wire.protocol import Synthesize

AudioItem = bytes | TimedWords | Queued | BaseException | None


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
    begun: tuple[Segment, Features] | None = None  # the segment this turn began, and its features
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

    @property
    def exhausted(self) -> bool:
        """Every segment decoded (or none to decode)."""
        return not self.segments and (self.windows is None or self.windows.done)

    def work_left(self) -> list[Work]:
        """What is left of this job once its turn is over: the rest of the segment being decoded and its
        segments after it (nothing once it is finished)."""
        if self.finished:
            return []
        work: list[Work] = []
        if self.windows is not None and not self.windows.done:
            work.append(self.windows.remaining)
        return work + self.later_segments


def estimated(jobs: Iterable[Job], calibration: Calibration | None) -> list[Work]:
    """Queued jobs as the ramp sees them: their segments' tokens once their text is prepared."""
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
