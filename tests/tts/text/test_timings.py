"""Word timings (tts/text/timings.py): written tokens -> spoken words -> phoneme tokens -> frames.

The mapping is checked against the whole speech-text table, the timing rule on hand-made durations, and
both engines end to end: windowed decoding emits exactly the frames the times are counted in, at any
speed, across segments.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tts.text.test_speech_text import CASES
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.scheduling.plan import WindowPlan
from tts.scheduling.steps import windowed
from tts.text import timings
from tts.text.speech_text import speech_text
from tts.text.timings import NO_WORD, WordTokens, label_phonemes, spoken_words
from tts.wire.protocol import Catalog, Synthesize, parse_message

FRAME_MS = SAMPLES_PER_FRAME / 24


@pytest.mark.parametrize(("written", "heard"), CASES, ids=[w[:40] for w, _ in CASES])
def test_spoken_words_are_the_speech_text_words_each_heard_as_a_written_token(written: str, heard: str):
    words = spoken_words(written, "en-us")
    assert [word for word, _ in words] == speech_text(written).split()
    tokens = written.split()
    heard_as = [token for _, token in words if token != NO_WORD]
    assert heard_as == sorted(heard_as), "words stay in order"
    assert all(0 <= token < len(tokens) for token in heard_as)


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Fix bug #42 today.", ["Fix", "bug", "#42", "#42", "today."]),
        ("It costs $4.50.", ["It", "costs", "$4.50.", "$4.50.", "$4.50.", "$4.50."]),
        ("It is **very** important.", ["It", "is", "**very**", "important."]),
        (
            "See [the guide](https://example.com/guide).",
            ["See", "[the", "guide](https://example.com/guide)."],
        ),
        ("Great job! 🎉 Tom & Jerry", ["Great", "job!", "Tom", "&", "Jerry"]),
        ("Keep a schedule - it helps.", ["Keep", "a", "schedule", None, "it", "helps."]),
    ],
)
def test_each_spoken_word_is_named_by_the_token_it_was_written_as(written: str, expected: list):
    tokens = written.split()
    assert [tokens[t] if t != NO_WORD else None for _, t in spoken_words(written, "en-us")] == expected


def test_a_merged_espeak_word_is_shared_between_its_words_in_order():
    # espeak reads "out of the box" as one word for "out of"; each word alone: aʊt, ʌv, ðə, bɑːks
    labels = label_phonemes("aʊɾəv ðə bɑːks.", ["aʊt", "ʌv", "ðə", "bɑːks"])
    assert labels == [0, 0, 0, 0, 1, NO_WORD, 2, 2, NO_WORD, 3, 3, 3, 3, 3, NO_WORD]


def test_an_espeak_word_that_aligns_with_nothing_is_the_next_word_not_yet_heard():
    assert label_phonemes("ab xy cd", ["ab", "zz", "cd"]) == [0, 0, NO_WORD, 1, 1, NO_WORD, 2, 2]


def test_times_count_frames_from_the_pad_leave_pauses_out_and_continue_after_earlier_audio():
    # tokens: "ab cd." -> words 0 (a, b) and 1 (c, d); the pads take 10 and 8 frames
    words = WordTokens(("ab", "cd."), "ab cd.", (0, 0, NO_WORD, 1, 1, NO_WORD))
    durations = np.array([10, 2, 3, 1, 2, 12, 4, 8])
    timed = words.times(durations, offset_samples=24_000)
    first, second = timed.words
    assert (first.text, first.start_ms, first.end_ms) == ("ab", 1000 + 10 * FRAME_MS, 1000 + 15 * FRAME_MS)
    # "d" holds the full stop's pause (12 frames): the word ends PAUSED_SOUND_MAX_FRAMES into it
    end = 1000 + (18 + timings.PAUSED_SOUND_MAX_FRAMES) * FRAME_MS
    assert (second.text, second.start_ms, second.end_ms) == ("cd.", 1000 + 16 * FRAME_MS, end)
    with pytest.raises(ValueError):
        words.times(durations[:-1], 0)


def test_tokens_heard_as_one_written_token_are_one_entry():
    words = WordTokens(("bug", "#42"), "x y z", (0, NO_WORD, 1, NO_WORD, 1))
    timed = words.times(np.array([1, 1, 1, 1, 1, 1, 1]), 0)
    assert [(w.text, w.start_ms, w.end_ms) for w in timed.words] == [
        ("bug", FRAME_MS, 2 * FRAME_MS),
        ("#42", 3 * FRAME_MS, 6 * FRAME_MS),
    ]


CATALOG = Catalog(
    voices=frozenset({"af_heart"}),
    languages=frozenset({"en-us"}),
    default_voice="af_heart",
    default_lang="en-us",
    max_text_chars=4000,
)
MARKDOWN = "It is **very** important: fix bug #42 today! 🎉 See [the guide](https://example.com/guide)."
WRITTEN_WORDS = ["It", "is", "**very**", "important:", "fix", "bug", "#42", "today!", "See", "[the"]
WRITTEN_WORDS.append("guide](https://example.com/guide).")


def request(text: str, speed: float = 1.0, **fields: object) -> Synthesize:
    message = parse_message(json.dumps({"text": text, "timestamps": True, "speed": speed, **fields}), CATALOG)
    assert isinstance(message, Synthesize) and message.timestamps
    return message


def timed_audio(
    engine, message: Synthesize, plan: WindowPlan
) -> tuple[list[timings.WordTime], int, list[int]]:
    """What the scheduler does: words per segment, audio window by window. Returns the words, the audio's
    length in samples, and each segment's first sample."""
    words, samples, starts = [], 0, []
    for segment in engine.speech_segments(message.speech, message.lang, timed=True):
        features = engine.features(list(segment.tokens), message.voice, message.speed)
        assert int(features.durations.sum()) == features.frames
        starts.append(samples)
        words += segment.words.times(features.durations, samples).words
        decode = windowed(engine, features, plan)
        while not decode.done:
            samples += len(decode.next())
    return words, samples, starts


def assert_ordered_within(words: list[timings.WordTime], samples: int) -> None:
    ends = [0.0] + [w.end_ms for w in words]
    assert all(w.start_ms < w.end_ms for w in words)
    assert all(previous <= w.start_ms for previous, w in zip(ends, words, strict=False)), "no overlap"
    assert words[-1].end_ms <= samples / 24


@pytest.fixture(scope="module")
def torch_engine(torch_model_dir):
    from tts.engines.torch.engine import TorchEngine

    return TorchEngine(TTSConfig(engine="torch", threads=2), torch_model_dir)


@pytest.fixture(params=["onnx", "torch"])
def any_engine(request):
    return request.getfixturevalue("engine" if request.param == "onnx" else "torch_engine")


@pytest.mark.parametrize("speed", [0.8, 1.3])
def test_both_engines_time_the_written_words_of_windowed_audio_at_any_speed(any_engine, speed: float):
    plan = WindowPlan(first_frames=12, max_frames=48, context_frames=8)
    message = request(MARKDOWN, speed)
    (tokens,) = any_engine.segments(message.written, message.lang)
    assert [list(s.tokens) for s in any_engine.speech_segments(message.speech, message.lang, timed=True)] == [
        tokens
    ]
    words, samples, _ = timed_audio(any_engine, message, plan)
    assert [w.text for w in words] == WRITTEN_WORDS
    assert_ordered_within(words, samples)
    at_one, samples_at_one, _ = timed_audio(any_engine, request(MARKDOWN), plan)
    # the predictor's durations are divided by the speed: every time scales with the audio
    assert words[-1].end_ms / at_one[-1].end_ms == pytest.approx(samples / samples_at_one, rel=0.1)
    assert samples / samples_at_one == pytest.approx(1 / speed, rel=0.15)


def test_a_later_segment_starts_after_the_audio_of_the_earlier_ones(engine, monkeypatch):
    """Segments of at most 40 tokens here (510 in production), so that one sentence makes several."""
    monkeypatch.setattr(timings, "MAX_PHONEME_TOKENS", 40)
    message = request(
        "Thanks for waiting, I found your order. It shipped yesterday, and it arrives Thursday."
    )
    words, samples, starts = timed_audio(engine, message, WindowPlan(12, 48, 8))
    assert len(starts) >= 3
    assert [w.text for w in words] == message.written.split()
    assert_ordered_within(words, samples)
    for start in starts[1:]:
        after = [w for w in words if w.start_ms >= start / 24]
        assert after, "every segment has words"


@pytest.mark.parametrize(
    ("text", "fields", "written"),
    [
        ("Please call Nguyen, then AWS.", {"lexicon": {"Nguyen": "wˈɪn", "AWS": "ˌAdˌʌbᵊljuˈɛs"}}, None),
        ("Please call [Nguyen](/wˈɪn/), then AWS.", {}, ["Please", "call", "Nguyen", "then", "AWS."]),
        (
            '<speak>Please call <phoneme ph="wˈɪn">Nguyen</phoneme>, <break time="300ms"/>then '
            '<sub alias="Amazon Web Services">AWS</sub> on <say-as interpret-as="date">2024-03-05</say-as>.'
            "</speak>",
            {},
            ["Please", "call", "Nguyen", "then", "AWS", "on", "2024-03-05"],
        ),
    ],
    ids=["lexicon", "inline", "ssml"],
)
def test_word_timings_name_the_written_word_not_its_replacement(engine, plan, text, fields, written):
    """A replaced word is one entry named as written, timed where its replacement is heard; every word
    lies inside the audio, in order, across a break's segments."""
    message = request(text, **fields)
    words, samples, starts = timed_audio(engine, message, plan)
    named = [w.text for w in words]
    assert named == (written or text.split())
    assert {"Nguyen", "AWS"} <= {w.strip(",.") for w in named}
    assert_ordered_within(words, samples)
    if "break" in text:
        assert len(starts) == 2 and any(w.start_ms >= starts[1] / 24 for w in words)
