"""The one event schema both modes produce (and the browser, the demo and the bench consume).

Every event is a JSON object with `type` and `t_ms`, milliseconds since `agent_start` on the agent's
clock: `agent_start`, `text_delta`, `audio_stream_start`, `audio_chunk`, `audio_stream_end`,
`agent_end`, `error`.
"""

from __future__ import annotations

import base64
import time
from typing import Any

Event = dict[str, Any]


class EventClock:
    """Stamps events with milliseconds since the run started."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def ms(self) -> float:
        return round((time.perf_counter() - self._start) * 1000, 1)

    def event(self, kind: str, **fields: Any) -> Event:
        return {"type": kind, "t_ms": self.ms(), **fields}


def audio_chunk(clock: EventClock, seq: int, data: bytes, sentence: int | None) -> Event:
    return clock.event("audio_chunk", seq=seq, data=base64.b64encode(data).decode(), sentence=sentence)


def error(clock: EventClock, code: str, message: str) -> Event:
    return clock.event("error", code=code, message=message)
