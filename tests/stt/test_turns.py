"""The turn tracker on scripted VAD probabilities: when speech is confirmed, when the turn ends, what
is a false start, and what audio each utterance carries; and the rule that ends a turn at a pause."""

from __future__ import annotations

import numpy as np
import pytest

from stt.config import VAD_CHUNK_MS, VAD_CHUNK_SAMPLES, STTConfig
from stt.turns import (
    PauseBegan,
    SpeechPaused,
    SpeechResumed,
    SpeechStarted,
    TurnPolicy,
    TurnTracker,
    UtteranceEnded,
    ends_turn,
)

POLICY = TurnPolicy(threshold=0.5, end_of_turn_ms=320, min_speech_ms=96, speech_pad_ms=64)


def run(probabilities: list[float], policy: TurnPolicy = POLICY, finish: bool = True):
    """Feed one chunk per probability (the chunk's samples all equal its index, to find it again)."""
    scores = iter(probabilities)
    tracker = TurnTracker(policy, lambda chunk: next(scores))
    audio = np.repeat(np.arange(len(probabilities), dtype=np.float32), VAD_CHUNK_SAMPLES)
    events = tracker.feed(audio[:1000]) + tracker.feed(audio[1000:])  # a feed need not be chunk-aligned
    if finish:
        events += tracker.finish()
    return tracker, events


def chunk_ids(event: UtteranceEnded) -> list[int]:
    return [int(v) for v in event.samples[::VAD_CHUNK_SAMPLES]]


def test_speech_is_confirmed_after_min_speech_and_ends_after_the_silence():
    tracker, events = run([0.0] * 5 + [0.9] * 6 + [0.0] * 12)
    started, began, paused, ended = events
    assert started == SpeechStarted(1, 3 * VAD_CHUNK_MS)  # two chunks of pre-roll before chunk 5
    # one chunk into the silence the pause begins (its decode starts), four chunks in it is judged, on
    # the same audio: what the utterance ends with (the pad's chunk not heard yet a zero)
    assert isinstance(began, PauseBegan) and isinstance(paused, SpeechPaused)
    assert np.array_equal(began.samples, paused.samples) and began.end_ms == paused.end_ms == ended.end_ms
    assert np.array_equal(paused.samples[:-VAD_CHUNK_SAMPLES], ended.samples[:-VAD_CHUNK_SAMPLES])
    assert isinstance(ended, UtteranceEnded) and ended.utterance == 1
    # pre-roll 3-4, speech 5-10, then the trailing silence cut to the pad (two chunks)
    assert chunk_ids(ended) == list(range(3, 13))
    assert ended.end_ms == 13 * VAD_CHUNK_MS
    assert tracker.utterances == 1 and tracker.false_starts == 0


def test_a_short_burst_is_a_false_start_and_never_reported():
    tracker, events = run([0.0] * 3 + [0.9] * 2 + [0.0] * 12)
    assert events == []
    assert tracker.false_starts == 1 and tracker.utterances == 0


def test_a_pause_shorter_than_the_turn_end_keeps_one_utterance():
    _, events = run([0.9] * 4 + [0.1] * 8 + [0.9] * 4 + [0.0] * 12)
    # paused twice; the first pause's audio is not the utterance's (speech resumed after it)
    kinds = [SpeechStarted, PauseBegan, SpeechPaused, SpeechResumed, PauseBegan, SpeechPaused, UtteranceEnded]
    assert [type(e) for e in events] == kinds
    _, first_pause, resumed, _, last_pause, ended = events[1:]
    assert resumed == SpeechResumed(1)
    assert len(first_pause.samples) < len(ended.samples) == len(last_pause.samples)


def test_a_dip_shorter_than_the_check_begins_a_pause_and_nothing_else():
    """A pause begins (its decode may start) at `pause_decode_ms` of silence; speech back before
    `turn_check_ms` leaves no `SpeechPaused` or `SpeechResumed`, and the next silence begins anew, its
    `SpeechPaused` on that pause's audio."""
    _, events = run([0.9] * 6 + [0.0] * 2 + [0.9] * 4 + [0.0] * 12)
    kinds = [SpeechStarted, PauseBegan, PauseBegan, SpeechPaused, UtteranceEnded]
    assert [type(e) for e in events] == kinds
    _, dip, began, paused, ended = events
    assert len(dip.samples) < len(began.samples) == len(paused.samples) == len(ended.samples)
    assert np.array_equal(began.samples, paused.samples)


def test_a_pause_decoded_at_the_check_begins_there():
    """`pause_decode_ms` at (or past) `turn_check_ms`: no `PauseBegan`, the decode starts at the check."""
    policy = TurnPolicy(
        threshold=0.5, end_of_turn_ms=320, min_speech_ms=96, speech_pad_ms=64, pause_decode_ms=500
    )
    _, events = run([0.9] * 6 + [0.0] * 12, policy)
    assert [type(e) for e in events] == [SpeechStarted, SpeechPaused, UtteranceEnded]


def feed(tracker: TurnTracker, count: int) -> list:
    return tracker.feed(np.zeros(count * VAD_CHUNK_SAMPLES, np.float32))


def test_a_pause_judged_finished_ends_the_turn_there_with_the_audio_it_was_judged_on():
    scores = iter([0.9] * 6 + [0.0] * 4 + [0.9] * 6 + [0.0] * 20)
    tracker = TurnTracker(POLICY, lambda chunk: next(scores))
    *_, paused = feed(tracker, 10)
    assert isinstance(paused, SpeechPaused)
    assert tracker.end_turn(paused.utterance + 1) is None  # not the utterance that paused
    ended = tracker.end_turn(paused.utterance)
    assert ended == UtteranceEnded(paused.utterance, paused.samples, paused.start_ms, paused.end_ms)
    assert not tracker.in_utterance and tracker.end_turn(paused.utterance) is None
    started, *_ = feed(tracker, 6)  # the next speech is the next utterance
    assert started == SpeechStarted(2, 10 * VAD_CHUNK_MS)


def test_a_pause_that_speech_came_back_after_cannot_end_the_turn():
    scores = iter([0.9] * 6 + [0.0] * 4 + [0.9])
    tracker = TurnTracker(POLICY, lambda chunk: next(scores))
    *_, paused = feed(tracker, 10)
    assert feed(tracker, 1) == [SpeechResumed(paused.utterance)]
    assert tracker.end_turn(paused.utterance) is None and tracker.in_utterance


def test_a_check_later_than_the_pad_judges_the_audio_the_bound_would_end_with():
    policy = TurnPolicy(
        threshold=0.5, end_of_turn_ms=640, min_speech_ms=96, speech_pad_ms=64, turn_check_ms=200
    )
    _, events = run([0.9] * 6 + [0.0] * 30, policy)
    _, _, paused, ended = events
    assert len(paused.samples) == len(ended.samples)
    assert (paused.start_ms, paused.end_ms) == (ended.start_ms, ended.end_ms)


def test_with_the_default_settings_a_300_ms_pause_in_a_sentence_does_not_end_the_turn():
    """The end-of-turn default guarded by what it does (#49): 300 ms of silence inside a sentence, not
    judged finished, leaves one utterance; the turn ends only after the sentence's last word."""
    policy = TurnPolicy.from_config(STTConfig())
    speech, pause = [0.9] * 30, [0.0] * round(300 / VAD_CHUNK_MS)
    tracker, events = run(speech + pause + speech + [0.0] * 100, policy, finish=False)
    ended = [e for e in events if isinstance(e, UtteranceEnded)]
    assert len(ended) == 1 and tracker.utterances == 1
    assert chunk_ids(ended[0])[-1] >= 2 * len(speech) + len(pause)  # the second half is in it
    # a 1.5 s thinking pause does not end it either
    long_pause = [0.0] * round(1500 / VAD_CHUNK_MS)
    tracker, events = run(speech + long_pause + speech + [0.0] * 100, policy, finish=False)
    assert [type(e) for e in events].count(UtteranceEnded) == 1


@pytest.mark.parametrize(
    ("complete", "text", "ends"),
    [
        (0.9, "What is the capital of France?", True),
        (0.3, "What is the capital of France?", False),  # it does not sound finished
        (0.9, "Could you find me a", False),  # no sentence ends on an article
        (0.9, "I want to, um", False),
        (0.9, "My number is five five five,", False),  # Whisper's own comma
        (0.9, "Tell me about the weather and", False),
        (0.9, "What is the weather like?", True),  # a preposition ends questions often
        (0.1, "", True),  # nothing was said (a cough): nothing to wait for
    ],
)
def test_a_pause_ends_the_turn_on_its_sound_and_its_meaning(complete: float, text: str, ends: bool):
    assert ends_turn(complete, text, cut=0.5) is ends


def test_probabilities_between_the_thresholds_do_not_count_as_silence():
    _, events = run([0.9] * 4 + [0.4] * 20, finish=False)  # 0.4 is above the release (0.35)
    assert [type(e) for e in events] == [SpeechStarted]


def test_two_utterances_are_numbered_in_order():
    _, events = run([0.9] * 4 + [0.0] * 12 + [0.9] * 4 + [0.0] * 12)
    assert [(type(e).__name__, e.utterance) for e in events] == [
        ("SpeechStarted", 1),
        ("PauseBegan", 1),
        ("SpeechPaused", 1),
        ("UtteranceEnded", 1),
        ("SpeechStarted", 2),
        ("PauseBegan", 2),
        ("SpeechPaused", 2),
        ("UtteranceEnded", 2),
    ]


def test_the_end_of_input_finishes_the_open_utterance():
    _, events = run([0.9] * 6)
    assert [type(e) for e in events] == [SpeechStarted, UtteranceEnded]
    assert chunk_ids(events[1]) == list(range(6))


def test_an_utterance_is_cut_at_whispers_window():
    _, events = run([0.9] * 1000, finish=False)
    ended = [e for e in events if isinstance(e, UtteranceEnded)]
    assert len(ended) == 1 and len(ended[0].samples) == 30_000 // VAD_CHUNK_MS * VAD_CHUNK_SAMPLES


def test_a_pause_shorter_than_the_pad_stands_in_silence_for_the_pad_not_heard_yet():
    """With a 320 ms pad the pause begins at 32 ms: the early audio is the final's length, its speech
    the same, and the pad's last chunks zeros."""
    policy = TurnPolicy(threshold=0.5, end_of_turn_ms=640, min_speech_ms=96, speech_pad_ms=320)
    _, events = run([0.9] * 6 + [0.0] * 30, policy)
    _, _, paused, ended = events
    assert isinstance(paused, SpeechPaused) and len(paused.samples) == len(ended.samples)
    heard = 6 + 1  # speech, then the chunk of silence heard when the pause began
    assert np.array_equal(
        paused.samples[: heard * VAD_CHUNK_SAMPLES], ended.samples[: heard * VAD_CHUNK_SAMPLES]
    )
    assert not paused.samples[heard * VAD_CHUNK_SAMPLES :].any()
    assert (paused.start_ms, paused.end_ms) == (ended.start_ms, ended.end_ms)
