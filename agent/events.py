"""The one event schema both modes produce (and the browser, the demo, the local stack, the benchmarks
and the tests consume): every event is built here, and `read_events` is the one reader.

Every event is a JSON object with `type` and `t_ms`, milliseconds since `agent_start` on the agent's
clock: `agent_start`, `text_delta`, `audio_stream_start`, `audio_chunk`, `words`, `audio_stream_end`,
`interrupted`, `agent_end`, `error`. Audio is mono 16-bit PCM at SAMPLE_RATE unless the turn asked for a
codec.

A spoken conversation (agent.listening, the `/ws` WebSocket) adds the user's side, on the conversation's
own clock (ms since the WebSocket opened): `user_speech_started` (the VAD heard the user begin: a
barge-in when an answer is speaking: the client pauses it), `transcript_partial` while they talk,
`user_paused` (the user stopped for a moment: what they said if that is all, how finished it sounds,
and whether the turn ends there), `transcript` (the final words of an utterance, which become the next
turn's prompt), `answer_resumed` (the voice that paused the answer was a backchannel or a noise: play
on), `turn_discarded` (a turn started before the user had finished was thrown away, and what it had
computed) and `listening_end` when the input has ended and the last turn is over. Each turn's own
events keep their turn's clock.

`words` times are on the turn's audio timeline: `start_ms`/`end_ms` count from the turn's first audio
sample, so a player that knows how many ms of the turn's audio it has played knows the word being heard.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from facts import CHANNELS, SAMPLE_RATE
from tts.wire.sse import SSEParser

Event = dict[str, Any]


@dataclass(frozen=True)
class Word:
    """One written word of the answer and when it is heard (a `words` event's entry)."""

    text: str
    start_ms: float
    end_ms: float


class EventClock:
    """Stamps events with milliseconds since the run started."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def ms(self) -> float:
        return round((time.perf_counter() - self._start) * 1000, 1)

    def event(self, kind: str, **fields: Any) -> Event:
        return {"type": kind, "t_ms": self.ms(), **fields}


def agent_start(clock: EventClock, mode: str, voice: str, audio_format: str) -> Event:
    return clock.event(
        "agent_start", mode=mode, voice=voice, format=audio_format, sample_rate=SAMPLE_RATE, channels=CHANNELS
    )


def text_delta(clock: EventClock, seq: int, text: str) -> Event:
    return clock.event("text_delta", seq=seq, text=text)


def audio_stream_start(clock: EventClock, audio_format: str, voice: str) -> Event:
    return clock.event(
        "audio_stream_start", format=audio_format, voice=voice, sample_rate=SAMPLE_RATE, channels=CHANNELS
    )


def audio_stream_end(clock: EventClock, total_chunks: int, duration_s: float) -> Event:
    return clock.event("audio_stream_end", total_chunks=total_chunks, duration_s=round(duration_s, 3))


def agent_end(clock: EventClock, ok: bool, **summary: Any) -> Event:
    return clock.event("agent_end", ok=ok, **summary)


def audio_chunk(clock: EventClock, seq: int, data: bytes, sentence: int | None) -> Event:
    return clock.event("audio_chunk", seq=seq, data=base64.b64encode(data).decode(), sentence=sentence)


def words(clock: EventClock, seq: int, spoken: Iterable[Word]) -> Event:
    return clock.event(
        "words",
        seq=seq,
        words=[{"text": w.text, "start_ms": w.start_ms, "end_ms": w.end_ms} for w in spoken],
    )


def interrupted(clock: EventClock, played_ms: float, heard: str | None) -> Event:
    """The answer to an interrupt: what the interrupted turn's history now says the listener heard
    (None: there was no turn to interrupt, or the listener had heard all of it)."""
    return clock.event("interrupted", played_ms=played_ms, heard=heard)


def queued(clock: EventClock, position: int) -> Event:
    """The speech endpoint's replica is full: the turn's audio waits for a slot, `position` in line."""
    return clock.event("queued", position=position)


def error(clock: EventClock, code: str, message: str) -> Event:
    return clock.event("error", code=code, message=message)


def user_speech_started(clock: EventClock, utterance: int, start_ms: float) -> Event:
    """`start_ms`: where the utterance starts in the microphone's audio (ms from its first sample)."""
    return clock.event("user_speech_started", utterance=utterance, start_ms=start_ms)


def transcript_partial(clock: EventClock, utterance: int, text: str) -> Event:
    return clock.event("transcript_partial", utterance=utterance, text=text)


def transcript(clock: EventClock, utterance: int, text: str, start_ms: float, end_ms: float) -> Event:
    """An utterance's final words; `start_ms`/`end_ms` as in `user_speech_started`."""
    return clock.event("transcript", utterance=utterance, text=text, start_ms=start_ms, end_ms=end_ms)


def user_paused(clock: EventClock, utterance: int, text: str, complete: float | None, ends: bool) -> Event:
    """The speech-to-text endpoint's `pause`: `complete` is its turn model's probability that the
    utterance is finished, `ends` whether the turn ends there."""
    return clock.event("user_paused", utterance=utterance, text=text, complete=complete, ends=ends)


def answer_resumed(clock: EventClock, utterance: int, heard: str) -> Event:
    """The utterance that paused the answer (`heard`: its words, none for a noise) does not take the turn."""
    return clock.event("answer_resumed", utterance=utterance, heard=heard)


def turn_discarded(
    clock: EventClock, utterance: int, prompt: str, reason: str, **waste: float | int
) -> Event:
    """A turn on `utterance`'s words was thrown away, for `reason`: `went_on` (the user spoke on after the
    pause it started at), `other_words` (the utterance ended otherwise), `continued` (the rest of its
    question came over its answer), `left` (the conversation ended first); `waste`: what it had
    computed (agent.turn_taking.Speculation)."""
    return clock.event("turn_discarded", utterance=utterance, prompt=prompt, reason=reason, **waste)


def listening_end(clock: EventClock, utterances: int, turns: int) -> Event:
    return clock.event("listening_end", utterances=utterances, turns=turns)


class TurnError(Exception):
    """A failure a turn reports as an `error` event with a code of its own (a bad payload, a session
    that is already answering), instead of the exception's class name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def read_events(chunks: Iterable[bytes]) -> Iterator[tuple[float, Event]]:
    """The events of an SSE body as its chunks arrive, each with the `time.perf_counter()` of the chunk
    that completed it."""
    parser = SSEParser()
    for raw in chunks:
        now = time.perf_counter()
        for event in parser.feed(raw):
            yield now, event
