"""Word timings: when each word of the text as written is heard, from the duration predictor.

The text side of an engine predicts, for every phoneme token of a segment, how many output frames it
lasts (`Features.durations`, at the asked speed; 600 samples per frame at 24 kHz). A word's start is the
first frame of its first phoneme token, its end the last frame of its last one (of a sound before a
pause, at most PAUSED_SOUND_MAX_FRAMES: the predictor lengthens it by the pause). The frames of spaces and
punctuation belong to no word; the segment's leading and trailing pad tokens are silence.
Windowed decoding emits exactly 600 samples per frame (crossfades blend samples, they add none), so a
segment's frame count times 600 is its audio, and segment 2's words continue after segment 1's audio.

Two mappings lead from phoneme tokens back to what the client wrote:

1. Written tokens -> spoken words. `speech_text` (tts/text/speech_text.py) rewrites the written text rule by
   rule. `spoken_words` applies the same rules (`RULES`, in order) while tracking, for every character
   it produces, where in the written text it came from: text a rule leaves alone keeps its origin;
   inside a replacement, characters copied from the match (a group such as a link's text or an
   emphasised word, found by aligning the replacement with the match) keep theirs, and characters a
   rule inserts ("number", "point", "dollars", "and") come from the whole match. A spoken word is heard
   as the written token (whitespace-separated, in the original) most of its letters and digits came
   from; consecutive spoken words heard as the same token are one entry (`#42` -> "number 42",
   `$4.50` -> "4 dollars 50 cents", `snake_case_names`), and a written token no spoken word comes from
   (an emoji, a code block, a lone `-`) has no entry. Entries keep the token as written:
   `**very**`, `[the`, `guide](https://example.com/guide).`.
2. Spoken words -> phoneme tokens. espeak-ng reads the whole spoken text at once (context changes the
   phonemes, and it joins words: "out of" is `aʊɾəv`), so each spoken word is also phonemized alone and
   the two phoneme strings are aligned character by character (`difflib`, no junk heuristic): an
   aligned sound takes its word; a sound left unaligned takes the word of the sound before it in the
   same espeak word, else after it, and a whole espeak word left unaligned takes the next word not yet
   heard; a word still without a sound (a weak "a" inside espeak's `ʌvə`) takes the last sound of the
   word before it. Words thus stay in order and never overlap.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from facts import SAMPLE_RATE
from tts.config import MAX_PHONEME_TOKENS, SAMPLES_PER_FRAME
from tts.text.g2p import split_tokens
from tts.text.speech_text import RULES, Rule

NO_WORD = -1
# Kokoro's duration predictor gives the sound before a pause (a comma, a full stop, the segment's end)
# the pause's length as well: "important:" ended on a `t` of 12 frames (300 ms) whose audio is ~50 ms.
# A word before a pause ends at most this many frames into its last sound (2-4 fit the audio's energy on
# the tuning clips; BENCHMARKS.md).
PAUSED_SOUND_MAX_FRAMES = 3
_WORDS = re.compile(r"\S+")
Span = tuple[int, int]  # [start, stop) in the written text; (0, 0) for a character from nowhere


@dataclass(frozen=True)
class WordTime:
    text: str  # the written token
    start_ms: float  # from the request's first audio sample
    end_ms: float


@dataclass(frozen=True)
class TimedWords:
    """One segment's words and their times: what a `words` control frame carries."""

    words: tuple[WordTime, ...]


@dataclass(frozen=True)
class WordTokens:
    """Which written token each phoneme token of one segment is heard as."""

    written: tuple[str, ...]  # the request's written tokens
    phonemes: str  # the segment's phoneme tokens, one character each
    token_words: tuple[int, ...]  # per phoneme token: an index into `written`, or NO_WORD

    def times(self, durations: np.ndarray, offset_samples: int) -> TimedWords:
        """The segment's words, timed by its `durations` (frames per token, the two pads included),
        starting `offset_samples` after the request's first audio sample."""
        if len(durations) != len(self.token_words) + 2:
            raise ValueError(f"{len(durations)} durations for {len(self.token_words)} tokens and 2 pads")
        starts = np.concatenate([[0], np.cumsum(durations)])  # frame where each token starts
        runs: list[list[int]] = []  # [written index, first token, last token], tokens counted from the pad
        for token, word in enumerate(self.token_words, start=1):
            if word == NO_WORD:
                continue
            if runs and runs[-1][0] == word:
                runs[-1][2] = token
            else:
                runs.append([word, token, token])
        words = []
        for word, first, last in runs:
            start, end = starts[first], starts[last + 1]
            if self._pause(last + 1):  # the predictor holds the pause on the word's last sound
                end = starts[last] + min(durations[last], PAUSED_SOUND_MAX_FRAMES)
            words.append(
                WordTime(
                    self.written[word],
                    _ms(offset_samples + start * SAMPLES_PER_FRAME),
                    _ms(offset_samples + end * SAMPLES_PER_FRAME),
                )
            )
        return TimedWords(tuple(words))

    def _pause(self, token: int) -> bool:
        """Token `token` (counted from the leading pad) is punctuation or the trailing pad."""
        return token > len(self.phonemes) or not (
            _is_sound(self.phonemes[token - 1]) or self.phonemes[token - 1] == " "
        )


def _ms(samples: int) -> float:
    return round(float(samples) * 1000 / SAMPLE_RATE, 1)


def _substitute(rule: Rule, text: str, origins: list[Span]) -> tuple[str, list[Span]]:
    """`rule.pattern.sub(rule.say, text)`, with the origin of every character it produces."""
    pieces: list[str] = []
    spans: list[Span] = []
    done = 0
    for match in rule.pattern.finditer(text):
        pieces.append(text[done : match.start()])
        spans.extend(origins[done : match.start()])
        said = match.expand(rule.say) if isinstance(rule.say, str) else rule.say(match)
        matched = origins[match.start() : match.end()]
        whole = (matched[0][0], matched[-1][1]) if matched else (0, 0)
        said_spans = [whole] * len(said)
        aligner = difflib.SequenceMatcher(None, match.group(), said, autojunk=False)
        for a, b, size in aligner.get_matching_blocks():
            said_spans[b : b + size] = matched[a : a + size]
        pieces.append(said)
        spans.extend(said_spans)
        done = match.end()
    pieces.append(text[done:])
    spans.extend(origins[done:])
    return "".join(pieces), spans


def spoken_words(written: str, lang: str) -> list[tuple[str, int]]:
    """The words of `speech_text(written, lang)` in order, each with the index of the written token
    (`written.split()`) it is heard as, or NO_WORD for a word with no letter or digit (a dash)."""
    english = lang.lower().startswith("en")
    text, origins = written, [(i, i + 1) for i in range(len(written))]
    for rule in RULES:
        if english or not rule.english:
            text, origins = _substitute(rule, text, origins)
    token_at = [NO_WORD] * len(written)
    for index, token in enumerate(_WORDS.finditer(written)):
        token_at[token.start() : token.end()] = [index] * (token.end() - token.start())
    words = []
    for word in _WORDS.finditer(text):
        votes: Counter[int] = Counter()
        for position in range(word.start(), word.end()):
            start, stop = origins[position]
            heard_as = next((t for t in token_at[start:stop] if t != NO_WORD), NO_WORD)
            if text[position].isalnum() and heard_as != NO_WORD:
                votes[heard_as] += 1
        best = min(votes, key=lambda token: (-votes[token], token)) if votes else NO_WORD
        words.append((word.group(), best))
    return words


def _is_sound(phoneme: str) -> bool:
    """A phoneme character that is part of a word (letters, stress and length marks, diacritics), not a
    space or punctuation."""
    return unicodedata.category(phoneme)[0] in "LM"


def label_phonemes(phonemes: str, word_phonemes: list[str]) -> list[int]:
    """For each character of `phonemes` (the G2P of the whole text), the index of the word in
    `word_phonemes` (the G2P of each word alone) it belongs to; NO_WORD for spaces and punctuation."""
    joined: list[str] = []
    owner: list[int] = []
    for index, word in enumerate(word_phonemes):
        joined.extend([" ", *word])
        owner.extend([NO_WORD, *(index if _is_sound(ch) else NO_WORD for ch in word)])
    labels = [NO_WORD] * len(phonemes)
    aligner = difflib.SequenceMatcher(None, phonemes, "".join(joined), autojunk=False)
    for a, b, size in aligner.get_matching_blocks():
        labels[a : a + size] = owner[b : b + size]
    for run in _WORDS.finditer(phonemes):  # espeak's words
        sounds = [i for i in range(run.start(), run.end()) if _is_sound(phonemes[i])]
        known = [labels[i] for i in sounds if labels[i] != NO_WORD]
        if not known:  # nothing aligned: the next word not yet heard
            before = max((label for label in labels[: run.start()] if label != NO_WORD), default=NO_WORD)
            after = [label for label in labels[run.end() :] if label != NO_WORD]
            guess = min(before + 1, len(word_phonemes) - 1, *after[:1])
            known = [guess]
        current = known[0]
        for i in sounds:
            current = labels[i] if labels[i] != NO_WORD else current
            labels[i] = current
    for word in range(1, len(word_phonemes)):  # a word left without a sound takes the last of the word
        if word not in labels:  # before it, where that has two or more ("of a": `ʌvə`)
            before = [i for i, label in enumerate(labels) if label == word - 1]
            if len(before) >= 2:
                labels[before[-1]] = word
    return labels


def word_tokens(
    written: str, lang: str, phonemes: str, phonemize: Callable[[str], str]
) -> list[tuple[str, WordTokens]]:
    """`phonemes` (the G2P of the spoken text, `speech_text(written)`) split into segments as
    `split_tokens` splits it, each with the written token every phoneme is heard as. `phonemize` is the
    engine's G2P of one word (filtered to its vocabulary, as `phonemes` is)."""
    heard = [(word, token) for word, token in spoken_words(written, lang) if token != NO_WORD]
    labels = label_phonemes(phonemes, [phonemize(word) for word, _ in heard])
    tokens = [NO_WORD if label == NO_WORD else heard[label][1] for label in labels]
    names = tuple(written.split())
    segments = []
    position = 0
    for piece in split_tokens(phonemes, MAX_PHONEME_TOKENS):
        position = phonemes.index(piece, position)
        segments.append((piece, WordTokens(names, piece, tuple(tokens[position : position + len(piece)]))))
        position += len(piece)
    return segments
