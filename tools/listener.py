"""What a listener hears of streamed speech: a player that starts at the first audio, plays at real time
and waits whenever the next audio has not arrived yet. Every wait is a stall.

One model for the demo's report (tools/demo.py), the playback study (benchmarks/playback.py), and,
written again in JavaScript because it runs in the browser, the web page's timeline (agent/web/index.html,
`listen`), whose rules are these:

- playback starts when the first audio arrives;
- audio that arrives before the player needs it waits in the buffer;
- audio that arrives after the buffer ran dry is a stall: its length is how long the player waited, its
  place is the wall time it began and the seconds of audio heard before it;
- a wait under STALL_FLOOR_S is the event loop's and the socket's jitter between two frames that were
  sent back to back, not a gap a listener hears (frames are 100 ms of audio).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

STALL_FLOOR_S = 0.002


class Arrival(NamedTuple):
    at_s: float
    """When it arrived (seconds from any fixed start)."""
    audio_s: float
    """Seconds of audio in it."""


class Stall(NamedTuple):
    at_s: float
    """When the player ran dry (same clock as the arrivals)."""
    after_audio_s: float
    """Seconds of audio heard before it."""
    length_s: float


@dataclass(frozen=True)
class Heard:
    first_s: float
    audio_s: float
    heard_by_s: float
    """When the last sample has been played."""
    stalls: list[Stall] = field(default_factory=list)

    @property
    def stall_s(self) -> float:
        return sum(stall.length_s for stall in self.stalls)

    def summary(self) -> str:
        """`no stall`, or `2 stalls, 0.35 s in all, the first after 0.3 s of audio`."""
        if not self.stalls:
            return "no stall"
        count = f"{len(self.stalls)} stall{'s' if len(self.stalls) > 1 else ''}"
        first = self.stalls[0].after_audio_s
        return f"{count}, {self.stall_s:.2f} s in all, the first after {first:.1f} s of audio"


def listen(arrivals: list[Arrival]) -> Heard:
    """The listener's view of one answer's audio, in arrival order. No audio is an error: there is nothing
    to hear, and saying "no stall" would hide it."""
    if not arrivals:
        raise ValueError("no audio arrived")
    first = arrivals[0].at_s
    played_until, heard_s = first, 0.0
    stalls: list[Stall] = []
    for arrival in arrivals:
        if arrival.at_s - played_until >= STALL_FLOOR_S:
            stalls.append(Stall(played_until, heard_s, arrival.at_s - played_until))
        played_until = max(played_until, arrival.at_s) + arrival.audio_s
        heard_s += arrival.audio_s
    return Heard(first, heard_s, played_until, stalls)
