"""Barge-in: when each word of a turn is heard, and what the listener had heard when they interrupted.

The container sends each request's word timings (`words` control frames, opt-in with `"timestamps":
true`), in ms from that request's first audio sample. A turn speaks many requests one after another, so
`AudioTimeline` moves them onto the turn's audio timeline (ms from the turn's first audio sample) by
adding the audio of the turn's earlier requests, counted exactly: PCM by its bytes (2 per sample at
SAMPLE_RATE), a codec by the container's `synthesis_complete.duration_s` (whole samples, to 1 ms).

`SpokenTurn` keeps those words and the signal that interrupts the turn. A client that interrupts says
how much of the turn's audio it has played (`played_ms`); the words heard are those with
`start_ms < played_ms`, and the turn is recorded in the conversation as `heard_record(...)`: those words
as written, then INTERRUPTED_MARK. Bedrock's messages have no field for it (LiveKit keeps an
`interrupted` flag on its chat message, Pipecat keeps only the spoken text), so the mark is in the text,
where the model reading the history sees it. Nothing heard is the mark alone (Bedrock refuses a blank
text block).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from typing import Any

from agent.events import Word
from facts import SAMPLE_BYTES, SAMPLE_RATE

INTERRUPTED_MARK = "[interrupted]"


class Interrupted(Exception):
    """The client interrupted the turn (barge-in): the turn stops speaking and ends."""


def _ms(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def parse_words(entries: Any) -> list[Word]:
    """The words of a `words` frame; an entry that is not `{text: str, start_ms, end_ms}` is skipped
    (a malformed frame costs its own words, never the turn)."""
    words = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            continue
        start, end = _ms(entry.get("start_ms")), _ms(entry.get("end_ms"))
        if start is not None and end is not None:
            words.append(Word(entry["text"], start, end))
    return words


class AudioTimeline:
    """Where each request's audio starts on the turn's audio timeline. Requests of one session are
    spoken one after another, so a request starts where the audio before it ends."""

    def __init__(self, pcm: bool) -> None:
        self._pcm = pcm
        self._pcm_bytes = 0
        self._completed_ms = 0.0
        self._starts: dict[str, float] = {}

    @property
    def position_ms(self) -> float:
        if self._pcm:
            return self._pcm_bytes / SAMPLE_BYTES * 1000 / SAMPLE_RATE
        return self._completed_ms

    def request_started(self, request_id: str) -> None:
        self._starts[request_id] = self.position_ms

    def audio(self, data: bytes) -> None:
        self._pcm_bytes += len(data)

    def request_complete(self, duration_s: float) -> None:
        self._completed_ms += duration_s * 1000

    def on_turn(self, request_id: str, words: Iterable[Word]) -> list[Word]:
        """`words` of `request_id` (times from its first sample) with times from the turn's first
        sample, rounded to 0.1 ms as the container rounds them."""
        offset = self._starts.get(request_id, self.position_ms)
        return [Word(w.text, round(w.start_ms + offset, 1), round(w.end_ms + offset, 1)) for w in words]


class SpokenTurn:
    """One turn's words on its audio timeline, the signal that interrupts it, and how it ended."""

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.interrupt_requested = asyncio.Event()
        self.ended = asyncio.Event()
        self.complete = False
        """The turn ended on its own: everything it wrote was spoken."""
        self.recorded = False
        """An interrupt has been applied to the conversation (a second one changes nothing)."""

    def heard_record(self, played_ms: float) -> str | None:
        """What the conversation should say the assistant said, once `played_ms` of the turn's audio
        was played: the words heard and INTERRUPTED_MARK; None when nothing was cut (the turn was
        complete and every word had been played to its end)."""
        if self.complete and all(w.end_ms <= played_ms for w in self.words):
            return None
        heard = [w.text for w in self.words if w.start_ms < played_ms]
        return " ".join([*heard, INTERRUPTED_MARK])
