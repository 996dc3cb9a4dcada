"""A request's text as the segments the model speaks: markup read, speech text, lexicon, G2P, the
510-token split, and which written word each phoneme is heard as.

`read_script` is the request's side (the wire protocol calls it, so bad markup or a bad lexicon is a
typed error before any audio): the markup's runs (`markup.py`) and the pronunciations that apply (the
request's lexicon over the endpoint's, `lexicon.py`). `script_segments` is the engine's side: each run said as
the listener should hear it (`speech_text`), its words found in the lexicon said as it says and the
rest by the engine's G2P, or its given phonemes, and the runs joined into blocks that share a speed
and follow a pause; each block split as `split_tokens` splits a text. With word timings, each phoneme
is labelled with the written word it is heard as: a run's own words through `timings.written_labels`,
and all of a replaced run (`<sub>`, `<say-as>`, `<phoneme>`, `[word](/phonemes/)`) as its one written
entry, so a timing names what the client wrote, never its replacement.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tts.text.lexicon import Pronunciations
from tts.text.markup import Run, read_markup
from tts.text.speech_text import speech_text
from tts.text.timings import NO_WORD, Cancelled, MappingCancelled, WordTokens, split_words, written_labels

G2P = Callable[[str], str]
"""A text's phonemes in the model's symbols (the engine's G2P for one language)."""


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Script:
    """What a request says: its runs and the pronunciations that apply to its words."""

    runs: tuple[Run, ...]
    pronunciations: Pronunciations = field(default_factory=Pronunciations)

    @classmethod
    def plain(cls, text: str) -> Script:
        """A text without markup (the tools', the calibration's)."""
        return cls((Run(text),))

    def spoken(self, lang: str) -> str:
        """What is said aloud, as one line: each run's speech text (phonemes given stand as their
        written words). Empty when nothing is."""
        said = (
            run.written if run.phonemes is not None else spoken_text(run.said or run.written, lang)
            for run in self.runs
        )
        return " ".join(piece for piece in said if piece)

    @property
    def pauses(self) -> bool:
        return any(run.pause_ms for run in self.runs)


@dataclass(frozen=True)
class Segment:
    """At most 510 phoneme tokens the model speaks in one forward pass: `rate` times the request's
    speed, after `pause_ms` of silence; `words`, with timings, says which written word each token is."""

    tokens: tuple[int, ...]
    rate: float = 1.0
    pause_ms: int = 0
    words: WordTokens | None = None


def spoken_text(text: str, lang: str) -> str:
    return " ".join(speech_text(text, lang).splitlines())


def read_script(text: str, lang: str, pronunciations: Pronunciations) -> Script:
    """The request's text read (MarkupError for bad markup)."""
    return Script(read_markup(text, lang), pronunciations)


@dataclass
class _Block:
    """Runs said one after the other at one rate, after one pause: their phonemes, and the written entry
    each phoneme is heard as."""

    rate: float
    pause_ms: int
    phonemes: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)

    def add(self, phonemes: str, labels: list[int]) -> None:
        if not phonemes:
            return
        if self.phonemes:
            self.phonemes.append(" ")
            self.labels.append(NO_WORD)
        self.phonemes.append(phonemes)
        self.labels += labels


def _sounds(phonemes: str, entry: int) -> list[int]:
    return [entry if unicodedata.category(ch)[0] in "LM" else NO_WORD for ch in phonemes]


def script_segments(
    script: Script,
    lang: str,
    g2p: G2P,
    vocab: Mapping[str, int],
    timed: bool = False,
    cancelled: Cancelled = _never,
    word_g2p: G2P | None = None,
) -> list[Segment]:
    """The script's segments (see the module docstring); `timed` labels their words, each phonemized by
    `word_g2p` (a word as the text's G2P said it; default `g2p`). `cancelled` is checked between runs and
    inside the word mapping (`MappingCancelled`)."""
    word_g2p = word_g2p or g2p
    say = script.pronunciations.say
    names: list[str] = []
    blocks: list[_Block] = []
    for run in script.runs:
        if cancelled():
            raise MappingCancelled("planning cancelled")
        if not blocks or run.pause_ms or run.rate != blocks[-1].rate:
            blocks.append(_Block(run.rate, run.pause_ms))
        block = blocks[-1]
        if run.phonemes is not None:
            phonemes = "".join(ch for ch in run.phonemes if ch in vocab)
        else:
            phonemes = say(spoken_text(run.said or run.written, lang), g2p)
        if not timed:
            block.add(phonemes, [])
        elif run.said is None and run.phonemes is None:
            labels = written_labels(run.written, lang, phonemes, lambda word: say(word, word_g2p), cancelled)
            block.add(phonemes, [NO_WORD if label == NO_WORD else label + len(names) for label in labels])
            names += run.written.split()
        else:
            block.add(phonemes, _sounds(phonemes, len(names)))
            names.append(" ".join(run.written.split()))
    return _segments(blocks, tuple(names), vocab, timed)


def _segments(
    blocks: list[_Block], names: tuple[str, ...], vocab: Mapping[str, int], timed: bool
) -> list[Segment]:
    segments: list[Segment] = []
    pause_ms = 0  # a block with nothing to say passes its pause on
    started = NO_WORD
    for block in blocks:
        pause_ms += block.pause_ms
        phonemes = "".join(block.phonemes)
        labels = block.labels if timed else [NO_WORD] * len(phonemes)
        pieces, started = split_words(names, phonemes, labels, started)
        for piece, words in pieces:
            tokens = tuple(vocab[ch] for ch in piece)
            segments.append(Segment(tokens, block.rate, pause_ms, words if timed else None))
            pause_ms = 0
    if pause_ms:
        segments.append(Segment((), pause_ms=pause_ms))
    return segments
