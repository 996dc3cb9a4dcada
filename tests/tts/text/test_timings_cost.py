"""Word mapping (tts/text/timings.py, issue 33 items 1 and 5): linear in the text's length, bounded,
cancellable, and one `words` entry per written token.

Before, the mapping ran difflib over the whole texts, once per rule per match and once over the whole
phoneme strings: 500 / 1,000 / 2,000 characters cost 0.5 / 4.4 / 32 s, a 4,000-character table row 235 s,
all of it before the request's first audio. The cost checks here compare the mapping of an input with
the mapping of the same input four times as long, on this machine in this run: linear work grows 4 times,
the old work 16 to 64 times. Absolute seconds are in the report of the change, not in a test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.support.timing import best_of
from tts.engines.base import CancelFlag, SynthesisCancelled
from tts.text.g2p import Phonemizer
from tts.text.script import Script
from tts.text.speech_text import speech_text
from tts.text.timings import MappingCancelled, label_phonemes, spoken_words, written_labels

PROSE = "Thanks for waiting, I found your order. It shipped yesterday, and it arrives Thursday. "


def prose(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n]


# The inputs, as functions of their length in characters.
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "prose": prose,
    "table row": lambda n: "|" + " a |" * (n // 4),
    "long url": lambda n: "https://example.com/" + "a/" * (n // 2),
    "url of dots": lambda n: "https://" + "." * n,
    "heading of hashes": lambda n: "# " + "#" * n + "x",
    "brackets": lambda n: "[" * n,
    "backticks": lambda n: "`" * n,
    "emphasis": lambda n: "**a** " * (n // 6),
}


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


def mapping(phonemizer: Phonemizer, written: str) -> Callable[[], object]:
    spoken = " ".join(speech_text(written).splitlines())
    phonemes = phonemizer.phonemize(spoken, "en-us") if spoken else ""
    words = {}

    def word_phonemes(word: str) -> str:  # espeak's own cost is linear; measured once, outside the clock
        if word not in words:
            words[word] = phonemizer.phonemize(word, "en-us")
        return words[word]

    written_labels(written, "en-us", phonemes, word_phonemes)  # fills the cache
    return lambda: written_labels(written, "en-us", phonemes, word_phonemes)


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_word_mapping_grows_linearly_with_the_text(phonemizer, name: str):
    make = ADVERSARIAL[name]
    short = best_of(mapping(phonemizer, make(500)), times=5)
    long = best_of(mapping(phonemizer, make(2000)), times=5)
    # linear: 4 times the work; 10 leaves room for a noisy machine, quadratic would be 16, cubic 64
    assert long < 10 * short, f"{name}: 500 chars {short:.4f} s, 2,000 chars {long:.4f} s"


def test_label_phonemes_of_texts_that_do_not_align_is_bounded():
    """Nothing in common between the two strings: difflib over the whole of them is quadratic."""
    short = best_of(lambda: label_phonemes("ab " * 500, ["xy"] * 500), times=5)
    long = best_of(lambda: label_phonemes("ab " * 2000, ["xy"] * 2000), times=5)
    assert long < 10 * short, f"1,500 characters {short:.4f} s, 6,000 characters {long:.4f} s"


class CancelAfter:
    """A cancel check that turns true on its `calls`-th call."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.calls = 0

    def __call__(self) -> bool:
        self.calls += 1
        self.left -= 1
        return self.left <= 0


def test_every_stage_of_the_mapping_stops_when_cancelled(phonemizer):
    written = "| " + " a | b |" * 500
    for stage in (
        lambda cancelled: spoken_words(written, "en-us", cancelled),
        lambda cancelled: label_phonemes("ab " * 2000, ["ab"] * 2000, cancelled),
        lambda cancelled: written_labels(prose(2000), "en-us", "ab " * 600, lambda w: "ab", cancelled),
    ):
        check = CancelAfter(3)
        with pytest.raises(MappingCancelled):
            stage(check)
        assert check.calls == 3, "it stops at the first check that says so"


def test_a_cancelled_request_stops_the_engines_mapping(engine):
    flag = CancelFlag(terminate=True)
    text = prose(2000)
    with pytest.raises(SynthesisCancelled):
        engine.speech_segments(Script.plain(text), "en-us", True, flag)
    assert engine.speech_segments(Script.plain("Hello there."), "en-us", True, CancelFlag())


JAPANESE = "今日は良い天気です。"  # one written token: no spaces
HYPHENATED = "-".join((["state", "of", "the", "art", "well", "known"] * 5)[:25])


@pytest.mark.parametrize(
    ("written", "segments"),
    [
        (JAPANESE, 1),
        (JAPANESE * 5, 2),
        (HYPHENATED, 1),
        ("-".join([HYPHENATED] * 8), 2),
        (f"Say {JAPANESE * 5} twice.", 2),
    ],
    ids=["japanese", "japanese over two segments", "25 hyphenated", "200 hyphenated", "between words"],
)
def test_each_written_token_is_one_entry_even_across_segments(engine, written: str, segments: int):
    timed = engine.speech_segments(Script.plain(written), "en-us", True)
    assert len(timed) >= segments
    entries = []
    for segment in timed:
        durations = np.ones(len(segment.tokens) + 2, dtype=np.int64)
        entries += [word.text for word in segment.words.times(durations, 0).words]
    assert entries == written.split()


def test_an_empty_text_has_no_phonemes(phonemizer):
    """phonemizer returns no line at all for it (the G2P raised IndexError)."""
    assert phonemizer.phonemize("", "en-us") == ""
    assert written_labels("", "en-us", "", lambda word: phonemizer.phonemize(word, "en-us")) == []
