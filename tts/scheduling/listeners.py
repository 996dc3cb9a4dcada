"""Each session's listener, as the scheduler models it (`deadlines.py`): a player that starts at the
session's first audio and plays at real time, so it runs out of audio at `runs_out_at`; the audio kept
back before it starts (its lead: computed, not yet handed to the reader, until it lets the listener play
the rest without a gap); and the PCM handed to the reader and not yet taken (`ahead`: the scheduler's
backpressure)."""

from __future__ import annotations

import time
from collections.abc import Container, Hashable

from tts.scheduling.jobs import Job
from tts.text.timings import TimedWords
from tts.wire.audio import pcm_seconds

LeadItem = bytes | TimedWords | None


class Listeners:
    def __init__(self) -> None:
        self.runs_out_at: dict[Hashable, float] = {}  # per owner: when its listener runs out of audio
        self.ahead: dict[Hashable, int] = {}  # per owner: PCM bytes computed and not yet taken
        # Per owner whose listener has not started: the audio computed so far, kept back until it lets
        # the listener play the rest without a gap (the scheduler decides: `WindowPlan.follows`), and
        # its seconds.
        self.lead: dict[Hashable, list[tuple[Job, LeadItem]]] = {}
        self.lead_s: dict[Hashable, float] = {}

    def begin_lead(self, owner: Hashable) -> None:
        """Keep `owner`'s audio back from now until `start`."""
        self.lead[owner], self.lead_s[owner] = [], 0.0

    def deliver(self, job: Job, item: LeadItem) -> None:
        """Hand `item` to the job's reader, or, while its listener has not started, keep it in the lead."""
        lead = self.lead.get(job.owner)
        if lead is not None:
            lead.append((job, item))
            if isinstance(item, bytes):
                self.lead_s[job.owner] += pcm_seconds(len(item))
            return
        if isinstance(item, bytes):
            self.ahead[job.owner] = self.ahead.get(job.owner, 0) + len(item)
            job.audio.put_nowait(item)
            self.played(job.owner, pcm_seconds(len(item)))
        else:
            job.audio.put_nowait(item)

    def start(self, owner: Hashable) -> None:
        """Release the lead to the readers: the listener starts now with all of it."""
        lead, seconds = self.lead.pop(owner, None), self.lead_s.pop(owner, 0.0)
        if lead is None:
            return
        for job, item in lead:
            if job.cancelled:
                continue
            if isinstance(item, bytes):
                self.ahead[owner] = self.ahead.get(owner, 0) + len(item)
            job.audio.put_nowait(item)
        if seconds:
            self.played(owner, seconds)

    def played(self, owner: Hashable, seconds: float) -> None:
        """`seconds` more audio for `owner`'s listener, who plays from now if it had run out."""
        self.runs_out_at[owner] = max(self.runs_out_at.get(owner, 0.0), time.perf_counter()) + seconds

    def taken(self, owner: Hashable, taken: int) -> int:
        """The reader took `taken` bytes of `owner`'s PCM: the bytes still ahead of it."""
        ahead = self.ahead.pop(owner, 0) - taken
        if ahead > 0:
            self.ahead[owner] = ahead
        return ahead

    def forget_played_out(self, now: float, queued: Container[Hashable]) -> None:
        """Forget the listeners that have played out all they were sent, of the sessions with nothing
        `queued`."""
        self.runs_out_at = {o: t for o, t in self.runs_out_at.items() if t > now or o in queued}

    def forget_if_played_out(self, owner: Hashable) -> None:
        """Forget `owner`'s listener if it has played out all it was sent: its next message starts
        afresh."""
        if self.runs_out_at.get(owner, 0.0) <= time.perf_counter():
            self.runs_out_at.pop(owner, None)
