"""Turn-taking: where an utterance starts and ends in a stream of 16 kHz samples, from the VAD's speech
probability of each 32 ms chunk. No I/O and no model: the scorer is passed in, and whether a pause ends
the turn is the caller's call (`end_turn`), made on the turn model's verdict (stt/serving/session.py).

- Speech begins at the first chunk at or above the threshold (with `speech_pad_ms` of audio before it
  kept, so the first word's onset is not cut); it is *confirmed*, and `SpeechStarted` goes out, once
  `min_speech_ms` of its chunks are speech. A candidate that falls silent before that is a false start
  (a cough, a click, a burst of noise): it is dropped and counted, and no client sees it.
- `PauseBegan` goes out when a confirmed utterance has been silent (below the release threshold,
  Silero's own hysteresis: threshold - 0.15) for `pause_decode_ms`: its audio is the audio the utterance
  ends with if it ends in this pause (`speech_pad_ms` of the silence, the part not heard yet as zeros).
  The caller starts decoding it, so the decode runs while the rest of the pause is heard.
- `SpeechPaused` goes out when that silence has lasted `turn_check_ms`, with the same audio: the caller
  asks the turn model whether it sounds finished; a finished turn ends there (`end_turn`, whose
  `UtteranceEnded` carries that same audio, so the decode already made is the final's). Speech that
  comes back first makes it moot: `SpeechResumed` says so (after a `PauseBegan` alone, nothing does:
  the caller's decode is simply not the utterance's).
- Otherwise the utterance ends after `end_of_turn_ms` of silence whatever the turn model said (the bound
  for a turn that sounds unfinished: "my number is five five five ..."), or when it reaches Whisper's
  30 s window; `UtteranceEnded` carries its audio with `speech_pad_ms` of the trailing silence.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from facts import STT_SAMPLE_RATE
from stt.config import VAD_CHUNK_MS, VAD_CHUNK_SAMPLES, WHISPER_WINDOW_S, STTConfig

HYSTERESIS = 0.15
# What a sentence does not end on, said or written: an article, a possessive, a conjunction joining what
# comes next, the infinitive's "to", a filler (a speaker holding the turn: "I want to, um"); Whisper's
# trailing comma, dash or ellipsis says the same. Kept short: other prepositions and verbs end questions
# often ("What is it like?", "Where are you from?").
UNFINISHED_WORDS = frozenset(
    ["a", "an", "the", "my", "your", "our", "their", "and", "or", "but", "to", "um", "uh", "er", "erm", "uhm"]
)
UNFINISHED_MARKS = (",", "-", "–", "...", "…")


@dataclass(frozen=True)
class TurnPolicy:
    """stt/config.py's fields of the same names say what each is and why its default."""

    threshold: float = 0.5
    end_of_turn_ms: int = 1800
    min_speech_ms: int = 200
    speech_pad_ms: int = 200
    turn_check_ms: int = 128
    pause_decode_ms: int = 32

    @classmethod
    def from_config(cls, config: STTConfig) -> TurnPolicy:
        return cls(
            config.vad_threshold,
            config.end_of_turn_ms,
            config.min_speech_ms,
            config.speech_pad_ms,
            config.turn_check_ms,
            config.pause_decode_ms,
        )


@dataclass(frozen=True)
class SpeechStarted:
    utterance: int
    start_ms: int


@dataclass(frozen=True)
class UtteranceEnded:
    utterance: int
    samples: np.ndarray
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class PauseBegan:
    """The utterance so far, as it will end if the silence that began `pause_decode_ms` ago holds."""

    utterance: int
    samples: np.ndarray
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class SpeechPaused:
    """The silence has lasted `turn_check_ms`: the utterance as its `PauseBegan` said (the same audio)."""

    utterance: int
    samples: np.ndarray
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class SpeechResumed:
    """Speech came back after a `SpeechPaused`: that pause did not end the utterance."""

    utterance: int


TurnEvent = SpeechStarted | PauseBegan | SpeechPaused | SpeechResumed | UtteranceEnded


def reads_finished(text: str) -> bool:
    """Whether a transcript could be a whole turn: it does not end on what no sentence ends on."""
    stripped = text.strip()
    if not stripped:
        return True
    if stripped.endswith(UNFINISHED_MARKS):
        return False
    return stripped.split()[-1].strip(".?!\"'").lower() not in UNFINISHED_WORDS


def ends_turn(complete: float, text: str, cut: float) -> bool:
    """Whether a pause ends the turn, on its sound and its meaning: the turn model's probability that the
    utterance is finished (`complete`) at or above `cut`, and its transcript reading finished. A
    transcript with no words (a cough Whisper heard as nothing) ends at once."""
    return not text.strip() or (complete >= cut and reads_finished(text))


def _chunks(ms: int) -> int:
    return -(-ms // VAD_CHUNK_MS)


class TurnTracker:
    def __init__(self, policy: TurnPolicy, score: Callable[[np.ndarray], float]) -> None:
        self._policy = policy
        self._score = score
        self._release = max(policy.threshold - HYSTERESIS, 0.01)
        self._pad = _chunks(policy.speech_pad_ms)
        self._pause = max(1, _chunks(policy.turn_check_ms))
        self._decode_at = min(max(1, _chunks(policy.pause_decode_ms)), self._pause)
        self._confirm = max(1, _chunks(policy.min_speech_ms))
        self._end = _chunks(policy.end_of_turn_ms)
        self._max = WHISPER_WINDOW_S * 1000 // VAD_CHUNK_MS
        self._pending = np.zeros(0, dtype=np.float32)
        self._preroll: deque[np.ndarray] = deque(maxlen=self._pad)
        self._chunks: list[np.ndarray] = []
        self._chunk_index = 0  # chunks scored so far in the stream
        self._start_chunk = 0
        self._speech = 0
        self._silence = 0
        self._confirmed = False
        self._began: PauseBegan | None = None
        self._paused: SpeechPaused | None = None
        self.utterances = 0
        self.false_starts = 0

    @property
    def in_utterance(self) -> bool:
        """True once speech is confirmed, until the utterance ends."""
        return self._confirmed

    @property
    def pausing(self) -> bool:
        """The confirmed utterance's latest chunk was silence: no new words to decode."""
        return self._confirmed and self._silence > 0

    @property
    def audio_ms(self) -> int:
        return self._chunk_index * VAD_CHUNK_MS

    def utterance_audio(self) -> np.ndarray:
        """The confirmed utterance so far (for a partial decode)."""
        return np.concatenate(self._chunks) if self._confirmed else np.zeros(0, dtype=np.float32)

    def feed(self, samples: np.ndarray) -> list[TurnEvent]:
        audio = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        whole = len(audio) // VAD_CHUNK_SAMPLES * VAD_CHUNK_SAMPLES
        self._pending = audio[whole:].copy()
        events: list[TurnEvent] = []
        for start in range(0, whole, VAD_CHUNK_SAMPLES):
            event = self._step(audio[start : start + VAD_CHUNK_SAMPLES])
            if event is not None:
                events.append(event)
        return events

    def finish(self) -> list[TurnEvent]:
        """End of input: the open utterance (if confirmed) ends here, with what audio it has."""
        if self._confirmed:
            if len(self._pending):
                self._chunks.append(self._pending)
            self._pending = np.zeros(0, dtype=np.float32)
            return [self._close(trailing=0)]
        if self._chunks:
            self.false_starts += 1
        self._reset()
        return []

    def end_turn(self, utterance: int) -> UtteranceEnded | None:
        """The caller judged the pause of `utterance` the end of its turn: the utterance ends with the
        audio its `SpeechPaused` carried. None when that pause is over (speech came back, or the
        utterance already ended)."""
        paused = self._paused
        if paused is None or paused.utterance != utterance or not self._confirmed:
            return None
        self._reset()
        return UtteranceEnded(utterance, paused.samples, paused.start_ms, paused.end_ms)

    def _step(self, chunk: np.ndarray) -> TurnEvent | None:
        probability = self._score(chunk)
        index = self._chunk_index
        self._chunk_index += 1
        if not self._chunks:
            if probability < self._policy.threshold:
                self._preroll.append(chunk)
                return None
            self._chunks = [*self._preroll, chunk]
            self._preroll.clear()
            self._start_chunk = index - (len(self._chunks) - 1)
            self._speech, self._silence = 1, 0
        else:
            self._chunks.append(chunk)
            if probability >= self._policy.threshold:
                self._speech += 1
                self._silence = 0
                self._began = None
                if self._paused is not None:
                    self._paused = None
                    return SpeechResumed(self.utterances)
            elif probability < self._release:
                self._silence += 1
        if not self._confirmed and self._speech >= self._confirm:
            self._confirmed = True
            self.utterances += 1
            return SpeechStarted(self.utterances, self._start_chunk * VAD_CHUNK_MS)
        if self._confirmed and self._silence == self._decode_at < self._pause and self._pause < self._end:
            self._began = PauseBegan(self.utterances, *self._pause_audio())
            return self._began
        if self._confirmed and self._silence == self._pause and self._pause < self._end:
            began = self._began or PauseBegan(self.utterances, *self._pause_audio())
            self._paused = SpeechPaused(began.utterance, began.samples, began.start_ms, began.end_ms)
            return self._paused
        if self._silence >= self._end:
            if self._confirmed:
                return self._close(trailing=self._silence)
            self.false_starts += 1
            self._reset()
        elif self._confirmed and len(self._chunks) >= self._max:
            return self._close(trailing=0)
        return None

    def _pause_audio(self) -> tuple[np.ndarray, int, int]:
        """The audio the utterance ends with if this silence ends it (`speech_pad_ms` of the silence,
        the part of the pad not heard yet as zeros), where it starts and ends in the stream (ms)."""
        samples, start_ms, _ = self._audio(keep=len(self._chunks) - max(0, self._silence - self._pad))
        unheard = max(0, self._pad - self._silence) * VAD_CHUNK_SAMPLES
        samples = np.concatenate([samples, np.zeros(unheard, np.float32)])
        return samples, start_ms, start_ms + round(len(samples) * 1000 / STT_SAMPLE_RATE)

    def _close(self, trailing: int) -> UtteranceEnded:
        """The utterance without its trailing silence past `speech_pad_ms`."""
        keep = len(self._chunks) - max(0, trailing - self._pad)
        event = UtteranceEnded(self.utterances, *self._audio(keep))
        self._reset()
        return event

    def _audio(self, keep: int) -> tuple[np.ndarray, int, int]:
        """The utterance's first `keep` chunks, where they start and end in the stream (ms)."""
        samples = np.concatenate(self._chunks[:keep])
        start_ms = self._start_chunk * VAD_CHUNK_MS
        return samples, start_ms, start_ms + round(len(samples) * 1000 / STT_SAMPLE_RATE)

    def _reset(self) -> None:
        self._chunks = []
        self._speech = self._silence = 0
        self._confirmed = False
        self._began = None
        self._paused = None
