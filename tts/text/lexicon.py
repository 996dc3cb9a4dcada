"""Pronunciations a user fixes: a lexicon of words and how to say them, per request and per endpoint.

An entry is a word and its phonemes, in IPA or in Kokoro's own symbols (`tts/text/phonemes.py` reads
either into the model's): `{"Nguyen": "wˈɪn", "AWS": "ˌAdˌʌbᵊljuˈɛs"}`. The endpoint's lexicon is a JSON
file of such entries (`TTS_LEXICON`); a request's (`"lexicon"` in the WebSocket message, the
`POST /invocations` body and OpenAI's body) is laid over it: where both have a word, the request's wins.

Case rules: an entry written with a capital letter matches that spelling only (`US` is not `us`, `Nice`
the city is not `nice`); an entry in lower case matches the word in any case (`nguyen` matches
`Nguyen` and `NGUYEN`). Where both match, the exact spelling wins. A word is a whole word of the text:
letters and digits, joined by `'`, `-`, `.`, `@`, `&`, `+` inside it (`C++`, `AT&T`, `e-mail`,
`support@example.com`); `Nguyen's` is a word of its own, not `Nguyen` with an ending.

Bad input is a typed error (`LexiconError`, code `invalid_lexicon`; a symbol Kokoro lacks is
`unknown_phoneme`), found in time linear in the lexicon's size: the entry count is checked before any
entry is read (MAX_REQUEST_ENTRIES, MAX_ENDPOINT_ENTRIES), a key is at most MAX_WORD_CHARS.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tts.text.phonemes import UnknownPhoneme, kokoro_phonemes

MAX_REQUEST_ENTRIES = 1_000
"""A request's entries: its words need no more (a 4,000-character text has about 700 words)."""
MAX_ENDPOINT_ENTRIES = 100_000
"""An endpoint's file: a company's names and terms; each language's conversion is cached once."""
MAX_WORD_CHARS = 64
MAX_FILE_BYTES = 8 * 1024 * 1024
WORD = re.compile(r"\w(?:[\w'’.@&+-]*[\w+])?")
"""A word of the text as the lexicon sees it; linear: the greedy middle gives back at most its own run."""


class LexiconError(ValueError):
    """A lexicon the container cannot use; `code` is a stable protocol error code."""

    def __init__(self, message: str, code: str = "invalid_lexicon") -> None:
        super().__init__(message)
        self.code = code


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}..."


@dataclass(frozen=True)
class Pronunciations:
    """A lexicon read for one language: each word's Kokoro phonemes, the exact spellings and the
    lower-case entries that match any case; `under` is the lexicon this one is laid over."""

    exact: Mapping[str, str] = field(default_factory=dict)
    any_case: Mapping[str, str] = field(default_factory=dict)
    under: Pronunciations | None = None

    def __bool__(self) -> bool:
        return bool(self.exact) or bool(self.under)

    def lookup(self, word: str) -> str | None:
        found = self.exact.get(word)
        if found is None:
            found = self.any_case.get(word.lower())
        if found is None and self.under is not None:
            return self.under.lookup(word)
        return found

    def over(self, under: Pronunciations) -> Pronunciations:
        """This lexicon laid over `under`: its words first."""
        if not under:
            return self
        if not self:
            return under
        return Pronunciations(self.exact, self.any_case, under)

    def say(self, text: str, g2p: Callable[[str], str]) -> str:
        """`text`'s phonemes: each word of the lexicon as its entry says, the rest by `g2p`; a space
        between two pieces where the text has one there (`Nguyen!` keeps its `!` on the word)."""
        if not self:
            return g2p(text)
        pieces: list[tuple[str, str | None]] = []  # (text, its phonemes when the lexicon gives them)
        done = 0
        for word in WORD.finditer(text):
            phonemes = self.lookup(word.group())
            if phonemes is not None:
                pieces += [(text[done : word.start()], None), (word.group(), phonemes)]
                done = word.end()
        pieces.append((text[done:], None))
        said = ""
        spaced = False  # the text had white space since the last phonemes
        for piece, given in pieces:
            phonemes = given if given is not None else g2p(piece) if piece.strip() else ""
            if phonemes:
                said += " " if said and (spaced or piece[:1].isspace()) else ""
                said += phonemes
                spaced = piece[-1:].isspace()
            else:
                spaced = spaced or bool(piece)
        return said


@dataclass(frozen=True)
class Lexicon:
    """Entries as written: word -> IPA or Kokoro's symbols. `for_language` reads them into Kokoro's
    symbols for a language (a diphthong is one symbol in English, two elsewhere)."""

    entries: Mapping[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)

    def for_language(self, lang: str) -> Pronunciations:
        return _read(self, lang.lower())


@functools.lru_cache(maxsize=64)
def _read(lexicon: Lexicon, lang: str) -> Pronunciations:
    exact: dict[str, str] = {}
    for word, written in lexicon.entries.items():
        try:
            exact[word] = kokoro_phonemes(written, lang)
        except UnknownPhoneme as error:
            raise LexiconError(f"lexicon entry {_shown(word)}: {error}", "unknown_phoneme") from None
    any_case = {word: phonemes for word, phonemes in exact.items() if word == word.lower()}
    return Pronunciations(exact, any_case)


def parse_lexicon(value: object, limit: int = MAX_REQUEST_ENTRIES) -> Lexicon:
    """A JSON object of word -> phonemes, checked (LexiconError naming the entry)."""
    if not isinstance(value, dict):
        raise LexiconError("'lexicon' must be an object of word -> phonemes")
    if len(value) > limit:
        raise LexiconError(f"'lexicon' has {len(value)} entries; the limit is {limit}")
    for word, phonemes in value.items():
        if len(word) > MAX_WORD_CHARS or not WORD.fullmatch(word):
            raise LexiconError(
                f"lexicon key {_shown(word)} is not one word (letters and digits, joined by ' - . @ & +; "
                f"at most {MAX_WORD_CHARS} characters)"
            )
        if not isinstance(phonemes, str):
            raise LexiconError(f"lexicon entry {_shown(word)} must be a string of phonemes")
    return Lexicon(dict(value))


def load_lexicon(path: Path) -> Lexicon:
    """The endpoint's lexicon file (TTS_LEXICON): a JSON object of word -> phonemes, read and checked
    once at start (LexiconError naming the file and the entry)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise LexiconError(f"{path} has {size} bytes; the limit is {MAX_FILE_BYTES}")
        value = json.loads(path.read_text(encoding="utf-8"))
        lexicon = parse_lexicon(value, MAX_ENDPOINT_ENTRIES)
        for lang in ("en-us", "en-gb", "es"):  # English and the others read IPA differently: check both
            lexicon.for_language(lang)
        return lexicon
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise LexiconError(f"cannot read the lexicon {path}: {exc}") from None
    except LexiconError as error:
        raise LexiconError(f"{path}: {error}", error.code) from None
