"""What a spoken conversation (agent.listening) makes of the user's voice while the agent talks, and of a
turn that is not certain yet. Pure: no I/O.

Barge-in that knows what it hears. The user starting to talk over an answer pauses it (the client stops
playing at `user_speech_started`; `Playback` stops counting), and the utterance decides: a backchannel
("mm-hmm", "yeah", "right", "okay" alone, or two of them) or a noise (a cough, a breath: Whisper hears no
words, or a bracketed tag such as "(coughing)") lets the answer resume where it paused, the history
unchanged (`answer_resumed`); anything else interrupts it as before (what was heard up to the pause
goes in the history) and is the next turn. A partial transcript of three words, not all backchannels,
interrupts at once, without waiting for the utterance's end (PARTIAL_WORDS).

Preemptive turns. When the speech-to-text endpoint's `pause` (stt/README.md) says how the utterance ends
if the user stops here, and its turn model leans finished, the turn starts on that text before the
turn is certain (LiveKit's preemptive generation): the model writes and the first audio is computed,
but its events are held (`Speculation`). The utterance's `final` with the same words releases them at
once (the answer is already under way); speech coming back, or other words, throw it away: the model
and the speech stop (the scheduler's cancel path), the history is put back as it was, and what was
computed for nothing is counted (`turn_discarded`).

A turn that ended too early. Real words over an answer that has barely begun (CONTINUATION_S,
CONTINUATION_HEARD_MS) are the rest of its question, not a new one: that answer is thrown away as a
preemptive one is, and the two utterances are one turn.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.events import Event
from facts import PCM_BYTES_PER_S

DiscardTurn = Callable[[str], Awaitable[None]]
"""Throws the session's latest turn away: its model stopped, the history as before it (agent.model)."""


@dataclass(frozen=True)
class TurnTaking:
    """How a conversation takes turns (the rules above; agent.config says what each setting is). The
    defaults are the plain rules: any voice interrupts at once, and a turn starts on the final."""

    backchannels: frozenset[str] | None = None
    preempt_complete: float | None = None
    discard_turn: DiscardTurn | None = None


CONTINUATION_S = 3.0
CONTINUATION_HEARD_MS = 1000.0
"""Words over an answer that began less than CONTINUATION_S after its question ended, with less than
CONTINUATION_HEARD_MS of it heard, are the rest of that question (a turn ended too early: "Could you
find me?" ... "a train to the coast"): the answer is thrown away and the two are one turn."""
PARTIAL_WORDS = 3
"""A partial transcript over an answer interrupts it once it has this many words of two letters or
more, not all backchannels: a backchannel's partials are short and garbled ("M.M. H." for Kokoro's
"Mm-hmm"), a question reaches three words within its first partials."""
MAX_BACKCHANNELS = 2
HUM_LETTERS = "mhnuap"
MAX_HUM_PIECES = 3
"""An utterance of at most this many backchannels ("yeah, okay") is one; a third phrase is a turn."""
_TAG = re.compile(r"\([^)]*\)|\[[^\]]*\]|\*[^*]*\*")
_WORDS = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")


def words(text: str) -> list[str]:
    """The words of a transcript, lower case, without punctuation or bracketed tags."""
    return _WORDS.findall(_TAG.sub(" ", text.lower()))


def _hum(word: str) -> bool:
    """A hum, however Whisper spells it ("mm-hmm" heard as "mm-hump" or "M.M. Hump", "uh-huh" as
    "unhan"): the letters of hums only, with an m or an h."""
    letters = word.replace("-", "")
    return len(letters) >= 2 and set(letters) <= set(HUM_LETTERS) and bool(set(letters) & {"m", "h"})


def ignorable(text: str, backchannels: frozenset[str]) -> bool:
    """Whether an utterance heard over an answer leaves it playing: no words (a noise), one hum, or
    nothing but at most MAX_BACKCHANNELS backchannel phrases."""
    said = words(text)
    if len(said) <= MAX_HUM_PIECES and _hum("".join(said)):  # "M.M. Hump": a hum spelled in pieces
        return True
    phrases = 0
    while said:
        for size in (2, 1):
            if " ".join(said[:size]) in backchannels:
                said = said[size:]
                phrases += 1
                break
        else:
            return False
    return phrases <= MAX_BACKCHANNELS


def takes_the_turn_early(partial: str, backchannels: frozenset[str]) -> bool:
    """Whether a partial transcript over an answer is already a turn (before its final)."""
    said = [word for word in words(partial) if len(word) > 1]  # "M.M. H.": a hum spelled out
    return len(said) >= PARTIAL_WORDS and not ignorable(partial, backchannels)


def same_words(first: str, second: str) -> bool:
    """Two transcripts that say the same (case and punctuation aside): a held turn's prompt and the
    utterance's final."""
    return words(first) == words(second)


class Speculation:
    """A turn and what it computed, for the count of work thrown away; one started on a pause's
    transcript (not `adopted` yet) has its events held until the utterance's final says the same."""

    def __init__(self, utterance: int, prompt: str, adopted: bool = False) -> None:
        self.utterance = utterance
        self.prompt = prompt
        self.adopted = adopted
        self._held: list[Event] = []
        self._started = time.perf_counter()
        self._text_chars = 0
        self._audio_chunks = 0
        self._audio_bytes = 0

    def hold(self, event: Event) -> bool:
        """Count `event`; keep it back while the turn is not taken (True), else send it (False)."""
        if event["type"] == "text_delta":
            self._text_chars += len(event["text"])
        elif event["type"] == "audio_chunk":
            self._audio_chunks += 1
            self._audio_bytes += len(event["data"]) * 3 // 4
        if self.adopted:
            return False
        self._held.append(event)
        return True

    def adopt(self) -> list[Event]:
        """The utterance ended as the turn was started on: the events held, to send now."""
        self.adopted = True
        held, self._held = self._held, []
        return held

    def waste(self) -> dict[str, float | int]:
        """What the thrown-away turn had computed: how long it ran, the text the model wrote, the audio
        (chunks, and bytes: PCM's 2 a sample; a codec's own)."""
        return {
            "ran_ms": round((time.perf_counter() - self._started) * 1000, 1),
            "text_chars": self._text_chars,
            "audio_chunks": self._audio_chunks,
            "audio_bytes": self._audio_bytes,
        }


class Playback:
    """How much of the latest turn's audio the client has played, now: its latest `played` report and
    the time since (it plays in real time), or the time since the turn's first audio without one; never
    more than the PCM it was sent (a codec's chunks carry no duration, so they set no ceiling). Paused
    (the user started talking over it), it stands still until it resumes or stops."""

    def __init__(self) -> None:
        self.turn_started()

    def turn_started(self) -> None:
        self._first_audio_at: float | None = None
        self._sent_ms: float | None = None
        self._report: tuple[float, float] | None = None
        self._paused_ms: float | None = None

    def pause(self) -> None:
        """The client paused playback (at `user_speech_started`)."""
        if self._paused_ms is None:
            self._paused_ms = self.played_ms()

    def resume(self) -> None:
        """The client plays on from where it paused."""
        if self._paused_ms is not None:
            paused, self._paused_ms = self._paused_ms, None
            self._report = (paused, time.perf_counter())

    def sent(self, event: Event) -> None:
        if event["type"] == "agent_start":
            self._sent_ms = 0.0 if event.get("format") == "pcm" else None
        elif event["type"] == "audio_chunk":
            if self._first_audio_at is None:
                self._first_audio_at = time.perf_counter()
            if self._sent_ms is not None:  # the PCM's length from its base64, without decoding it
                data = event["data"]
                pcm_bytes = len(data) * 3 // 4 - data[-2:].count("=")
                self._sent_ms += pcm_bytes * 1000 / PCM_BYTES_PER_S

    def reported(self, played_ms: float) -> None:
        if self._paused_ms is not None:
            self._paused_ms = played_ms
        else:
            self._report = (played_ms, time.perf_counter())

    def playing(self) -> bool:
        """The client is still playing PCM it was sent (a finished turn's audio outlasts the turn: it is
        computed faster than real time). Unknown for a codec, whose chunks carry no duration: False."""
        return self._sent_ms is not None and self.played_ms() < self._sent_ms

    def stopped(self) -> None:
        """The client stopped playing (a barge-in): what it played so far is all it will play."""
        if self._sent_ms is not None:
            self._sent_ms = self.played_ms()

    def played_ms(self) -> float:
        if self._paused_ms is not None:
            return self._paused_ms
        now = time.perf_counter()
        if self._report is not None:
            played = self._report[0] + (now - self._report[1]) * 1000
        elif self._first_audio_at is not None:
            played = (now - self._first_audio_at) * 1000
        else:
            return 0.0
        ceiling = self._sent_ms if self._sent_ms is not None else played
        return round(min(played, ceiling), 1)
