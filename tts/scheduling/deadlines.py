"""The deadline policy: when each session's next step is due, and how long the chosen step may take
(the earliest deadline is picked: `picking.py`; the listener: `listeners.py`).

Each session has a listener, modelled as a player that starts at the session's first audio and plays at
real time: it runs out of audio at `runs_out_at` (the first audio's time plus the audio computed since,
restarted from the moment of any step that came too late). The deadline of a session's next step is
that moment. A session whose listener has nothing to play yet (a new one, or one whose last answer has
played out) is due when its first turn, alone on the engine, would be done (`first_turn_s`: its text
side and first window, by the calibration), plus one shortest step for each listener already playing
(`shortest_step_s`; a late first audio is a longer wait before speech; a playing listener's gap is a
stutter in it).

The same arithmetic decides when a session waiting for a slot may take one (`room`): only once every
playing listener has the audio to wait for its first turn and then for its own next step.
"""

from __future__ import annotations

from collections.abc import Sequence

from tts.scheduling.admission import SENTENCE_TOKENS
from tts.scheduling.calibration import Calibration
from tts.scheduling.plan import BUDGET_SHARE, MIN_STEP_FRAMES, WindowPlan
from tts.scheduling.speed import DecodeSpeed


def first_audio_due(submitted_at: float, first_turn_s: float, playing: int, shortest_step_s: float) -> float:
    """A new session's deadline: its first turn's time after its message, after one shortest step of
    each of the `playing` listeners."""
    return submitted_at + first_turn_s + playing * shortest_step_s


def budget(now: float, deadlines: Sequence[float]) -> float:
    """The time the most urgent session's step may take: the k-th most urgent (`deadlines` in order)
    must see k steps done before its own listener runs out, so one long step cannot make the next
    session stall."""
    return max(0.0, min((due - now) / rank for rank, due in enumerate(deadlines, 1)))


def room(slacks: Sequence[float], first_turn_s: float, shortest_step_s: float) -> bool:
    """Whether a new session's first turn can run now without a playing listener running out: each
    listener's slack (seconds of audio it has left), in order from the least, covers that turn and
    then one shortest step of its own and of each listener before it, within BUDGET_SHARE (the plan's
    margin for a slower step). Admitted without this, at capacity + 2 on 2 cores, the second of two
    sessions let in together took its first turn while the first had only its first window's 0.3 s
    to play: it stalled 0.26-0.56 s (issue #49)."""
    return all(
        BUDGET_SHARE * slack >= first_turn_s + rank * shortest_step_s
        for rank, slack in enumerate(sorted(slacks), 1)
    )


def first_turn_s(plan: WindowPlan, calibration: Calibration | None) -> float:
    """Predicted time of a sentence's first turn alone on the engine: its text side and first window
    (the configured one: the shortest the ramp gives); 0 without a calibration."""
    if calibration is None:
        return 0.0
    return calibration.text.seconds(SENTENCE_TOKENS) + calibration.decode.seconds(
        [plan.first_frames + plan.context_frames]
    )


def shortest_step_s(plan: WindowPlan, speed: DecodeSpeed | None) -> float:
    """Predicted time of a budgeted step at its floor (MIN_STEP_FRAMES and its context); 0 without a
    measured speed."""
    if speed is None:
        return 0.0
    return speed.seconds([MIN_STEP_FRAMES + 2 * plan.context_frames])
