"""Admission: how many sessions this replica keeps gap-free (`capacity`, computed from the calibration),
and what a session beyond them gets: a place in line, told in-band (`Queued`), first audio when a slot
frees, and past the bound (`max_waiting`) a typed refusal (`EngineBusy`, the wire's `busy` code) that a
client or a balancer can act on.

Why not a fixed delay: a saturated engine that starts one more session takes its turns from every
playing listener, and all of them stall together; a new session held for a fixed time either still
comes too early (on a slow CPU, where one answer outlasts any fixed wait) or waits for nothing (on a
fast one). A waiting session costs the playing ones nothing, and it is served first in line (FIFO: no
starvation) the moment a playing session's listener has played out its answer.
"""

from __future__ import annotations

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


def sentence_seconds(plan: WindowPlan, calibration: Calibration, sharing: int) -> tuple[float, float]:
    """(engine seconds, audio seconds) of one SENTENCE_TOKENS sentence, on an engine that `sharing`
    sessions take turns on."""
    speed = calibration.decode
    frames = max(1, round(SENTENCE_TOKENS * calibration.frames_per_token))
    seconds = calibration.text.seconds(SENTENCE_TOKENS)
    start, index = 0, 0
    while start < frames:
        step = plan.step(start, index, frames, None, speed, sharing)
        stop = step[-1][1]
        seconds += speed.seconds(plan._decoded(start, stop - start, frames, index))
        start, index = stop, index + 1
    return seconds, frames * FRAME_S


def capacity(plan: WindowPlan, calibration: Calibration) -> int:
    """The most sessions k whose sentences, all at once, the engine computes within CAPACITY_SHARE of
    their audio's time (k * engine seconds <= share * audio seconds); at least 1: one session always
    plays gap-free, its first window long enough (the ramp) on an engine slower than real time."""
    k = 1
    while k < MAX_CAPACITY:
        seconds, audio = sentence_seconds(plan, calibration, k + 1)
        if (k + 1) * seconds > CAPACITY_SHARE * audio:
            break
        k += 1
    return k


def max_waiting(capacity: int) -> int:
    return WAITING_PER_SLOT * capacity
