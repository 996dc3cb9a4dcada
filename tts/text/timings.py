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
   rule. `spoken_words` applies the same rules (`RULES`, in order, pass after pass as `speech_text`
   does) while tracking, for every character it produces, the written token (whitespace-separated, in
   the original) it came from: text a rule leaves alone keeps its origin; inside a replacement, a letter
   or digit copied from the match (a link's text, an emphasised word, a table cell) keeps the origin of
   the one it was copied from, found in order at most COPY_REACH letters or digits ahead of the last
   one found, and anything a rule inserts ("number", "point", "dollars", "and") comes from the match's
   first token. A spoken word is heard as the written token most of its letters and digits came from;
   consecutive spoken words heard as the same token are one entry (`#42` -> "number 42", `$4.50` -> "4
   dollars 50 cents", `snake_case_names`), and a written token no spoken word comes from (an emoji, a
   code block, a lone `-`) has no entry. Entries keep the token as written: `**very**`, `[the`,
   `guide](https://example.com/guide).`.
2. Spoken words -> phoneme tokens. espeak-ng reads the whole spoken text at once (context changes the
   phonemes, and it joins words: "out of" is `aʊɾəv`), so each spoken word is also phonemized alone and
   the two phoneme strings are aligned character by character: `difflib` (no junk heuristic) over
   windows of ALIGN_WINDOW characters that step along both strings, so that the work per character is
   bounded (difflib over the whole strings grew with the cube of the text: 2,000 characters took 32 s).
   An aligned sound takes its word; a sound left unaligned takes the word of the sound before it in the
   same espeak word, else after it, and a whole espeak word left unaligned takes the next word not yet
   heard; a word still without a sound (a weak "a" inside espeak's `ʌvə`) takes the last sound of the
   word before it. Words thus stay in order and never overlap.

A written token heard across two segments (a long unspaced Japanese sentence, a hyphenated chain of
words) is one entry, in the segment where it starts: the later segment's sounds of it are no word.

Every function here takes an optional `cancelled` check, called every few hundred characters of work;
once it returns true the function raises `MappingCancelled`, so a cancelled request stops paying for
its mapping.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from facts import SAMPLE_RATE
from tts.config import MAX_PHONEME_TOKENS, SAMPLES_PER_FRAME
from tts.text.g2p import split_tokens
from tts.text.speech_text import MAX_PASSES, Rule, rules_for

NO_WORD = -1
# Kokoro's duration predictor gives the sound before a pause (a comma, a full stop, the segment's end)
# the pause's length as well: "important:" ended on a `t` of 12 frames (300 ms) whose audio is ~50 ms.
# A word before a pause ends at most this many frames into its last sound (2-4 fit the audio's energy on
# the tuning clips; BENCHMARKS.md).
PAUSED_SOUND_MAX_FRAMES = 3
_WORDS = re.compile(r"\S+")
# A copied letter is looked for at most this many letters or digits after the last one found: what a rule
# drops between two copied pieces is markup and spaces (no letters), or a link's target after its text.
COPY_REACH = 32
# Characters of the whole text's phonemes aligned per difflib call, and how far the window steps at least
# (a quarter): difflib's cost grows with the square of its input, so each step costs at most 128 x 192.
ALIGN_WINDOW = 128
Cancelled = Callable[[], bool]  # true once the work is no longer wanted


class MappingCancelled(Exception):
    """The word mapping stopped because its `cancelled` check returned true."""


def _never() -> bool:
    return False


def _check(cancelled: Cancelled) -> None:
    if cancelled():
        raise MappingCancelled("word mapping cancelled")


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


def _copied(source: str, said: str, origins: list[int], whole: int) -> list[int]:
    """The origin of each character of `said`, a rule's replacement for `source` (whose characters come
    from `origins`): see the module docstring. Linear: each letter is looked for in at most COPY_REACH."""
    letters = [i for i, ch in enumerate(source) if ch.isalnum()]
    alnum = "".join(source[i] for i in letters)
    said_origins = [whole] * len(said)
    found = 0  # letters of `source` already copied
    for position, ch in enumerate(said):
        if ch.isalnum():
            at = alnum.find(ch, found, found + COPY_REACH)
            if at >= 0:
                said_origins[position] = origins[letters[at]]
                found = at + 1
    return said_origins


def _substitute(rule: Rule, text: str, origins: list[int], cancelled: Cancelled) -> tuple[str, list[int]]:
    """`rule.pattern.sub(rule.say, text)`, with the written token every character it produces comes from."""
    pieces: list[str] = []
    said_origins: list[int] = []
    done = 0
    for match in rule.pattern.finditer(text):
        _check(cancelled)
        pieces.append(text[done : match.start()])
        said_origins.extend(origins[done : match.start()])
        said = match.expand(rule.say) if isinstance(rule.say, str) else rule.say(match)
        matched = origins[match.start() : match.end()]
        whole = next((token for token in matched if token != NO_WORD), NO_WORD)
        pieces.append(said)
        said_origins.extend(_copied(match.group(), said, matched, whole))
        done = match.end()
    pieces.append(text[done:])
    said_origins.extend(origins[done:])
    return "".join(pieces), said_origins


def spoken_words(written: str, lang: str, cancelled: Cancelled = _never) -> list[tuple[str, int]]:
    """The words of `speech_text(written, lang)` in order, each with the index of the written token
    (`written.split()`) it is heard as, or NO_WORD for a word with no letter or digit (a dash)."""
    origins = [NO_WORD] * len(written)
    for index, token in enumerate(_WORDS.finditer(written)):
        origins[token.start() : token.end()] = [index] * (token.end() - token.start())
    text = written
    for _ in range(MAX_PASSES):
        before = text
        for rule in rules_for(lang):
            text, origins = _substitute(rule, text, origins, cancelled)
        if text == before:
            break
    words = []
    for word in _WORDS.finditer(text):
        votes: Counter[int] = Counter(
            origins[position]
            for position in range(word.start(), word.end())
            if text[position].isalnum() and origins[position] != NO_WORD
        )
        best = min(votes, key=lambda token: (-votes[token], token)) if votes else NO_WORD
        words.append((word.group(), best))
    return words


def _is_sound(phoneme: str) -> bool:
    """A phoneme character that is part of a word (letters, stress and length marks, diacritics), not a
    space or punctuation."""
    return unicodedata.category(phoneme)[0] in "LM"


def _align(phonemes: str, joined: str, cancelled: Cancelled) -> list[tuple[int, int, int]]:
    """difflib's matching blocks (a, b, size) of `phonemes` and `joined`, over windows: each call aligns
    ALIGN_WINDOW characters of `phonemes` with 1.5 times as many of `joined` (the words alone carry a
    space each, and espeak's joins make either side longer), keeps the blocks that start in the first
    half of the window, and steps on from the last of them (at least a quarter window, on its diagonal)."""
    blocks = []
    a = b = 0
    width, reach = ALIGN_WINDOW, ALIGN_WINDOW * 3 // 2
    while a < len(phonemes) and b < len(joined):
        _check(cancelled)
        last = a + width >= len(phonemes) and b + reach >= len(joined)
        aligner = difflib.SequenceMatcher(
            None, phonemes[a : a + width], joined[b : b + reach], autojunk=False
        )
        step_a = step_b = 0
        for i, j, size in aligner.get_matching_blocks():
            if size and (last or i < width // 2):
                blocks.append((a + i, b + j, size))
                step_a, step_b = i + size, j + size
        if last:
            break
        if step_a < width // 4:
            step_b += width // 4 - step_a
            step_a = width // 4
        a, b = a + step_a, b + step_b
    return blocks


def label_phonemes(phonemes: str, word_phonemes: list[str], cancelled: Cancelled = _never) -> list[int]:
    """For each character of `phonemes` (the G2P of the whole text), the index of the word in
    `word_phonemes` (the G2P of each word alone) it belongs to; NO_WORD for spaces and punctuation."""
    joined: list[str] = []
    owner: list[int] = []
    for index, word in enumerate(word_phonemes):
        joined.extend([" ", *word])
        owner.extend([NO_WORD, *(index if _is_sound(ch) else NO_WORD for ch in word)])
    labels = [NO_WORD] * len(phonemes)
    for a, b, size in _align(phonemes, "".join(joined), cancelled):
        labels[a : a + size] = owner[b : b + size]
    next_known = [NO_WORD] * (len(phonemes) + 1)  # the first aligned label at or after each character
    for i in range(len(phonemes) - 1, -1, -1):
        next_known[i] = labels[i] if labels[i] != NO_WORD else next_known[i + 1]
    heard = NO_WORD  # the last word heard before the espeak word at hand
    for run in _WORDS.finditer(phonemes):  # espeak's words
        sounds = [i for i in range(run.start(), run.end()) if _is_sound(phonemes[i])]
        known = [labels[i] for i in sounds if labels[i] != NO_WORD]
        if not known:  # nothing aligned: the next word not yet heard
            after = next_known[run.end()]
            known = [min(heard + 1, len(word_phonemes) - 1, *([after] if after != NO_WORD else []))]
        current = known[0]
        for i in sounds:
            current = labels[i] if labels[i] != NO_WORD else current
            labels[i] = current
            heard = max(heard, current)
    at: defaultdict[int, list[int]] = defaultdict(list)  # each word's characters, in order
    for i, label in enumerate(labels):
        at[label].append(i)
    for word in range(1, len(word_phonemes)):  # a word left without a sound takes the last of the word
        if not at[word] and len(at[word - 1]) >= 2:  # before it, where that has two or more ("of a": `ʌvə`)
            labels[at[word - 1][-1]] = word
            at[word].append(at[word - 1].pop())
    return labels


def written_labels(
    written: str,
    lang: str,
    phonemes: str,
    phonemize: Callable[[str], str],
    cancelled: Cancelled = _never,
) -> list[int]:
    """For each character of `phonemes` (the G2P of the spoken text, `speech_text(written)`), the index
    of the written token (`written.split()`) it is heard as, or NO_WORD. `phonemize` is the G2P of one
    word (the same symbols as `phonemes`)."""
    heard = [(word, token) for word, token in spoken_words(written, lang, cancelled) if token != NO_WORD]
    known: dict[str, str] = {}  # each word phonemized once: a long URL says "slash" 2,000 times
    for word, _ in heard:
        if word not in known:
            _check(cancelled)
            known[word] = phonemize(word)
    word_phonemes = [known[word] for word, _ in heard]
    labels = label_phonemes(phonemes, word_phonemes, cancelled)
    return [NO_WORD if label == NO_WORD else heard[label][1] for label in labels]


def split_words(
    names: tuple[str, ...], phonemes: str, labels: list[int], started: int = NO_WORD
) -> tuple[list[tuple[str, WordTokens]], int]:
    """`phonemes` split into segments as `split_tokens` splits it, each with the written token (an index
    into `names`) every phoneme is heard as; a token goes to the segment it starts in, so one that
    `started` (an index) in an earlier segment is no word here. Returns the segments and the last
    token they have."""
    segments = []
    position = 0
    for piece in split_tokens(phonemes, MAX_PHONEME_TOKENS):
        position = phonemes.index(piece, position)
        own = tuple(NO_WORD if t <= started else t for t in labels[position : position + len(piece)])
        segments.append((piece, WordTokens(names, piece, own)))
        started = max((started, *own))
        position += len(piece)
    return segments, started
