"""Admission: how many sessions this replica keeps gap-free (`capacity`, computed from the calibration),
and what a session beyond them gets: a place in line, told in-band (`Queued`), first audio when a slot
frees, and past the bound (`max_waiting`) a typed refusal (`EngineBusy`, the wire's `busy` code) that a
client or a balancer can act on. `Slots` keeps who holds a slot, who waits and who sends no more; the
scheduler asks it at each submit and before each turn.

Why not a fixed delay: a saturated engine that starts one more session takes its turns from every
playing listener, and all of them stall together; a new session held for a fixed time either still
comes too early (on a slow CPU, where one answer outlasts any fixed wait) or waits for nothing (on a
fast one). A waiting session costs the playing ones nothing, and it is served first in line (FIFO: no
starvation) the moment a playing session's listener has played out its answer.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Container, Hashable
from dataclasses import dataclass

from tts.config import MAX_CAPACITY
from tts.engines.decode import FRAME_S
from tts.scheduling.calibration import Calibration
from tts.scheduling.plan import WindowPlan

# The sentence the capacity is computed on: 80 phoneme tokens, a 20-word sentence (the benchmarks'
# first-audio sentence), each costing its text side, its first window (the ramp's, for the sessions
# sharing the engine) and the fixed plan's steps after it, context frames included.
SENTENCE_TOKENS = 80
# The share of the engine's time that k sessions' sentences may fill: the rest is what the calibration
# does not time, the event loop, the encoders and the sockets, which take the same cores. Measured (`python
# -m benchmarks capacity`, 2 VNNI cores, the listeners' client on the same cores): one session's
# sentences fill 0.125 of the engine's time by the calibration, yet 5 sessions (0.64) stalled 0.2-0.9 s
# each while 4 (0.50) were gap-free: 0.55 claims the 4. On a CPU whose decoder is slower (AVX2 without
# VNNI: the int8 decoder about 3x slower, the Python around it not) that untimed work is a smaller part
# of a session's cost, so the share errs on the safe side there.
CAPACITY_SHARE = 0.55
# Waiting sessions per session served: the line is as long as four rounds of answers (a closed session's
# slot frees once its audio is computed, 3-6 s for a four-sentence answer on 2 cores, so the fourth in
# line hears its first audio within about half a minute); the next one is refused with `busy` (a
# balancer's cue to send it to another replica).
WAITING_PER_SLOT = 4


@dataclass(frozen=True)
class Queued:
    """Put on a waiting session's head job: its place in line (1: next to be served)."""

    position: int


class EngineBusy(Exception):
    """The line is full: this session is refused, every other one served as before."""

    code = "busy"


def sentence_steps(plan: WindowPlan, calibration: Calibration, sharing: int) -> list[list[int]]:
    """The frames each window of each step of one SENTENCE_TOKENS sentence decodes (context included),
    on an engine that `sharing` sessions take turns on (its first window the ramp's)."""
    speed = calibration.decode
    frames = max(1, round(SENTENCE_TOKENS * calibration.frames_per_token))
    steps, start, index = [], 0, 0
    while start < frames:
        stop = plan.step(start, index, frames, None, speed, sharing)[-1][1]
        steps.append(plan._decoded(start, stop - start, frames, index))
        start, index = stop, index + 1
    return steps


def sentence_seconds(plan: WindowPlan, calibration: Calibration, sharing: int) -> tuple[float, float]:
    """(engine seconds, audio seconds) of one SENTENCE_TOKENS sentence, on an engine that `sharing`
    sessions take turns on."""
    speed = calibration.decode
    seconds = calibration.text.seconds(SENTENCE_TOKENS)
    for decoded in sentence_steps(plan, calibration, sharing):
        seconds += speed.seconds(decoded)
    return seconds, max(1, round(SENTENCE_TOKENS * calibration.frames_per_token)) * FRAME_S


def batched_seconds(plan: WindowPlan, calibration: Calibration, sessions: int, batch: int) -> float:
    """Engine seconds of `sessions` sentences at once on an engine that decodes up to `batch` windows
    of any sessions in one pass (`DecodeSpeed.batch_seconds`): their text sides one after another, each
    step's windows in passes of `batch`."""
    speed = calibration.decode
    seconds = sessions * calibration.text.seconds(SENTENCE_TOKENS)
    for decoded in sentence_steps(plan, calibration, sessions):
        full, rest = divmod(sessions, batch)
        seconds += full * speed.batch_seconds(decoded * batch)
        seconds += speed.batch_seconds(decoded * rest) if rest else 0.0
    return seconds


def capacity(plan: WindowPlan, calibration: Calibration, batch: int = 1) -> int:
    """The most sessions k whose sentences, all at once, the engine computes within CAPACITY_SHARE of
    their audio's time (k * engine seconds <= share * audio seconds; with `batch` > 1 and a measured
    batched pass, the steps of up to `batch` sessions in one pass: `batched_seconds`); at least 1: one
    session always plays gap-free, its first window long enough (the ramp) on an engine slower than
    real time."""
    batches = batch > 1 and calibration.decode.batch_frame_s > 0
    k = 1
    while k < MAX_CAPACITY:
        seconds, audio = sentence_seconds(plan, calibration, k + 1)
        total = batched_seconds(plan, calibration, k + 1, batch) if batches else (k + 1) * seconds
        if total > CAPACITY_SHARE * audio:
            break
        k += 1
    return k


def max_waiting(capacity: int) -> int:
    return WAITING_PER_SLOT * capacity


class Slots:
    """The sessions holding a slot (all of them without a calibration), the line waiting for one (first
    come first), and those that send no more (`closed`): the scheduler's admission state."""

    def __init__(
        self, plan: WindowPlan, calibration: Calibration | None, fixed_capacity: int = 0, batch: int = 1
    ) -> None:
        self._plan = plan
        self._calibration = calibration
        self._fixed_capacity = fixed_capacity  # TTS_CAPACITY: the operator's figure; 0: the calibration's
        self._batch = batch  # windows the engine decodes in one pass (`capacity`)
        self._capacity: tuple[float, int] | None = None  # (when computed, capacity)
        self.admitted: set[Hashable] = set()
        self.waiting: deque[Hashable] = deque()
        self.closed: set[Hashable] = set()

    @property
    def capacity(self) -> int | None:
        """Sessions this replica admits at once: TTS_CAPACITY where the operator set it (say, from
        `python -m benchmarks capacity`), else `calibrated_capacity`."""
        return self._fixed_capacity or self.calibrated_capacity

    @property
    def calibrated_capacity(self) -> int | None:
        """Sessions the engine keeps gap-free (`capacity`) by the calibration as it stands, recomputed
        at most once a second (it follows every timed step)."""
        if self._calibration is None:
            return None
        now = time.perf_counter()
        if self._capacity is None or now - self._capacity[0] > 1.0:
            self._capacity = (now, capacity(self._plan, self._calibration, self._batch))
        return self._capacity[1]

    def enter(self, owner: Hashable) -> EngineBusy | None:
        """A slot for `owner` if one is free and nobody waits, else a place in line; past the line's
        bound, the refusal. An owner already admitted or waiting keeps what it has."""
        if owner in self.admitted or owner in self.waiting:
            return None
        capacity = self.capacity
        if capacity is None or (len(self.admitted) < capacity and not self.waiting):
            self.admitted.add(owner)
        elif len(self.waiting) >= max_waiting(capacity):
            return EngineBusy(f"all {capacity} slots busy and {len(self.waiting)} sessions waiting")
        else:
            self.waiting.append(owner)
        return None

    def close(self, owner: Hashable) -> bool:
        """`owner` sends no more; whether it holds a slot or a place in line."""
        if owner in self.admitted or owner in self.waiting:
            self.closed.add(owner)
            return True
        return False

    def leave_line(self, owner: Hashable) -> bool:
        """`owner` gives up its place in line, if it has one; whether it had."""
        if owner not in self.waiting:
            return False
        self.waiting.remove(owner)
        self.closed.discard(owner)
        return True

    def free(self, idle: Callable[[Hashable], bool], played_out: Callable[[Hashable], bool]) -> None:
        """Free the slots of the `idle` sessions (nothing queued or in flight) that send no more
        (`closed`) or whose listeners have `played_out` all they were sent."""
        for owner in list(self.admitted):
            if idle(owner) and (owner in self.closed or played_out(owner)):
                self.admitted.discard(owner)
                self.closed.discard(owner)

    def sharing(self, queued: Container[Hashable]) -> int:
        """Sessions admitted with work (`queued`), at least 1: those the engine's turns are shared by."""
        return max(1, sum(1 for o in self.admitted if o in queued))

    def admit_waiting(self, room: Callable[[], bool] = lambda: True) -> list[Hashable]:
        """Admit the first in line while slots are free and the engine has `room` for a new session's
        first turn (`Picker.room`, asked again after each): those admitted, in order."""
        capacity = self.capacity
        admitted = []
        while self.waiting and (capacity is None or len(self.admitted) < capacity) and room():
            owner = self.waiting.popleft()
            self.admitted.add(owner)
            admitted.append(owner)
        return admitted
