"""Incremental sentence chunking of streamed model text, so speech can start before the answer ends.

The customer's reference split with ``(?<=[.!?])\\s+``: it breaks "Dr. Smith" and "e.g. this", and it
only works on whole strings. This chunker is one state machine fed with whatever fragments the model
streams (tokens, words, the whole answer); a chunk is released as soon as the text after it proves
that it ended, and the result never depends on where the fragments were split.

Rules (the order in which they are checked):

* A newline ends a chunk (list items, headings, paragraphs). No lookahead is needed.
* A terminator run is a maximal run of ``. ! ? …`` (and ``。！？``), e.g. ``?!``, ``...``, ``!!``.
  Closing quotes and brackets right after it (``" ' ” ’ ) ] } » 」 』 ） 】 》``) and Markdown's emphasis
  marks (``* _``) belong to the sentence: ``He said "Stop." Then`` ends after the quote, ``**Keep it
  cool.** A cool room`` after the bold (models write their points that way; without it a bold
  sentence ran on into the next one, and a bold heading ``**Tip:**`` never ended a first chunk).
* CJK: a run that contains ``。！？`` ends the sentence right after the run and its closers; no space
  is needed after it.
* Otherwise the run must be followed by whitespace (so ``3.14``, ``v2.1.3``, ``$4.50``, ``1,000``,
  ``example.com/a.b``, ``john.doe@example.co.uk``, ``U.S`` and ``e.g.,`` never end anything), and the
  next significant character decides (opening quotes, brackets and emphasis marks are skipped to find
  it):
  - whitespace containing a newline: the sentence ended;
  - a lowercase letter: it did not (``Hmm... let me see``, ``"Really?" she asked``, ``approx. five``);
  - anything else (a capital, a digit, a symbol, CJK): it ended.
* A single ``.`` after a known abbreviation is special (the token before it, case-insensitive):
  - titles never end a sentence: Dr. Mr. Mrs. Ms. Prof. St. Mt. Rev. Fr. Sen. Rep. Gov. Gen. Col.
    Capt. Lt. Sgt. Hon. (so ``St.`` is always Saint, never a street that ends a sentence);
  - inline abbreviations never end one either: e.g. i.e. vs. v. cf. viz. approx. ca. fig. eq. vol.
    pp. (``No.`` is not among them: as an answer it is far more common than "No. 5");
  - single capital letters are initials and never end one (``J. R. R. Tolkien``; also ``plan B. Then``,
    which is the accepted cost), except the pronoun ``I``;
  - a one-to-three digit number or a single letter at the start of a line is a list marker
    (``1. first``, ``a. second``), never an end;
  - abbreviations that often close a sentence end it only when a capital letter follows:
    etc. a.m. p.m. Inc. Ltd. Co. Corp. LLC. Jr. Sr. and any dotted initialism (U.S. U.K. Ph.D.):
    ``10 a.m. The`` ends, ``10 a.m. tomorrow`` and ``etc. 5`` do not.
* End of input (``flush``) ends whatever is left, with or without final punctuation.

Options (all off by default, so by default this is a plain sentence chunker):

* ``first_fragment_min_words=N``: the first chunk may also end at a clause boundary once it holds at
  least N words (a CJK character counts as a word): after ``, ; : –`` followed by whitespace (after
  optional closers, ``**Tip:** Sleep`` included; so not in ``1,000``, ``10:30``, ``10–20``), or right
  after ``— ， ； ： 、``.
  This cuts the time to the first audio.
* ``first_fragment_max_words=N``: the first chunk also ends at the first whitespace after its N-th
  word (a CJK character counts as a word, but only whitespace cuts), whether or not a sentence or a
  clause ended: a first sentence of 30 words without a comma would otherwise hold the first audio back
  for as long as the model takes to write it (1.7 s at the local model's 20 words/s), and N words of
  speech (about N / 2.7 s) cover the time the model takes to write the rest.
* ``max_chunk_chars=M``: a chunk that would be longer than M characters is cut inside its first M + 1
  characters at the last clause boundary, else at the last whitespace, else after exactly M
  characters. The only chunk that can exceed M is the one ``flush`` returns when the text ends in
  opening quotes or brackets after a terminator (they are kept with the last sentence).

Split invariance holds because every decision reads only characters that have arrived: when the
deciding character is missing, the chunker waits (the decision is never revised), and ``flush`` only
hands back the undecided rest.
"""

from __future__ import annotations

import re

LATIN_TERMINATORS = ".!?…"
CJK_TERMINATORS = "。！？"
TERMINATORS = LATIN_TERMINATORS + CJK_TERMINATORS
EMPHASIS = "*_"
CLOSERS = "\"'”’)]}»」』）】》" + EMPHASIS
OPENERS = "\"'“‘([{«¿¡「『（【《" + EMPHASIS
SPACED_CLAUSE_MARKS = ",;:–"
UNSPACED_CLAUSE_MARKS = "—，；：、"


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


TITLES = _word_set("dr mr mrs ms prof st mt rev fr sen rep gov gen col capt lt sgt hon")
INLINE_ABBREVIATIONS = _word_set("e.g i.e vs v cf viz approx ca fig eq vol pp")
CLOSING_ABBREVIATIONS = _word_set("etc a.m p.m inc ltd co corp llc jr sr ph.d")
CLAUSE_MARKS = SPACED_CLAUSE_MARKS + UNSPACED_CLAUSE_MARKS

_DOTTED_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_LIST_MARKER = re.compile(r"\d{1,3}|[A-Za-z]")
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\s\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")

_NEVER, _IF_CAPITAL, _ORDINARY = "never", "if-capital", "ordinary"


class _Wait:
    """The deciding character has not arrived yet."""


class _Force:
    """The sentence would exceed max_chunk_chars: cut it inside the window instead."""


_WAIT = _Wait()
_FORCE = _Force()


def _count_words(text: str) -> int:
    return len(_WORD.findall(text))


class IncrementalSentenceChunker:
    """Turns a stream of text fragments into speakable chunks (sentences by default).

    `feed()` returns the chunks the new fragment completed; `flush()` returns the rest at the end of
    the input and resets the chunker for the next text.
    """

    def __init__(
        self,
        *,
        first_fragment_min_words: int | None = None,
        first_fragment_max_words: int | None = None,
        max_chunk_chars: int | None = None,
    ) -> None:
        for name, value in (
            ("first_fragment_min_words", first_fragment_min_words),
            ("first_fragment_max_words", first_fragment_max_words),
            ("max_chunk_chars", max_chunk_chars),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        self._min_words = first_fragment_min_words
        self._max_words = first_fragment_max_words
        self._max_chars = max_chunk_chars
        self._reset()

    def _reset(self) -> None:
        self._buffer = ""
        self._resume = 0
        self._first = True
        self._after_newline = True
        self._first_words = 0
        self._first_counted = 0

    def feed(self, fragment: str) -> list[str]:
        """Add streamed text; return the chunks it completed (stripped, in order)."""
        if not isinstance(fragment, str):
            raise TypeError(f"fragment must be str, got {type(fragment).__name__}")
        self._buffer += fragment
        chunks: list[str] = []
        while (chunk := self._next_chunk()) is not None:
            chunks.append(chunk)
        return chunks

    def flush(self) -> str | None:
        """End of input: return what is left (even without final punctuation), or None."""
        rest = self._buffer.strip()
        self._reset()
        return rest or None

    def _next_chunk(self) -> str | None:
        buf = self._buffer
        start = len(buf) - len(buf.lstrip())
        if start == len(buf):
            return None
        line_start = self._after_newline or "\n" in buf[:start]
        limit = start + self._max_chars if self._max_chars is not None else None
        pos = max(self._resume, start)
        while pos < len(buf):
            if limit is not None and pos >= limit:
                return self._emit(start, self._forced_end(start, limit))
            char = buf[pos]
            if char == "\n":
                return self._emit(start, pos)
            if char in TERMINATORS:
                verdict = self._terminator(start, pos, limit, line_start)
            elif self._first and self._min_words is not None and char in CLAUSE_MARKS:
                verdict = self._clause(start, pos, limit)
            elif self._first and self._max_words is not None and char.isspace() and self._has_max_words(pos):
                return self._emit(start, pos)
            else:
                pos += 1
                continue
            match verdict:
                case _Wait():
                    self._resume = pos
                    return None
                case _Force():
                    assert limit is not None
                    return self._emit(start, self._forced_end(start, limit))
                case (True, end):
                    return self._emit(start, end)
                case (False, after):
                    pos = after
        self._resume = pos
        return None

    def _has_max_words(self, pos: int) -> bool:
        """Whether the first chunk holds first_fragment_max_words words before the whitespace at pos.
        Counted from the last whitespace counted (no word straddles it), so each character once."""
        assert self._max_words is not None
        if pos > self._first_counted:
            self._first_words += _count_words(self._buffer[self._first_counted : pos])
            self._first_counted = pos
        return self._first_words >= self._max_words

    def _emit(self, start: int, end: int) -> str:
        chunk = self._buffer[start:end].strip()
        self._buffer = self._buffer[end:]
        self._resume = 0
        self._first = False
        self._after_newline = False
        return chunk

    def _skip(self, pos: int, chars: str, limit: int | None) -> int | _Wait | _Force:
        """Index after a run of `chars` starting at pos; waits when the run may go on."""
        buf = self._buffer
        while pos < len(buf) and buf[pos] in chars:
            pos += 1
        if limit is not None and pos > limit:
            return _FORCE
        if pos == len(buf):
            return _WAIT
        return pos

    def _terminator(
        self, start: int, pos: int, limit: int | None, line_start: bool
    ) -> tuple[bool, int] | _Wait | _Force:
        buf = self._buffer
        run_end = self._skip(pos, TERMINATORS, limit)
        if not isinstance(run_end, int):
            return run_end
        end = self._skip(run_end, CLOSERS, limit)
        if not isinstance(end, int):
            return end
        run = buf[pos:run_end]
        if any(c in CJK_TERMINATORS for c in run):
            return True, end
        if not buf[end].isspace():
            return False, end
        kind = self._abbreviation_kind(start, pos, line_start) if run == "." else _ORDINARY
        if kind == _NEVER:
            return False, end
        after = end
        while after < len(buf) and buf[after].isspace():
            if buf[after] == "\n":
                return True, end
            after += 1
        while after < len(buf) and buf[after] in OPENERS:
            after += 1
        if after == len(buf):
            return _WAIT
        following = buf[after]
        ended = following.isupper() if kind == _IF_CAPITAL else not following.islower()
        return ended, end

    def _abbreviation_kind(self, start: int, pos: int, line_start: bool) -> str:
        buf = self._buffer
        word_start = pos
        while word_start > start and not buf[word_start - 1].isspace():
            word_start -= 1
        word = buf[word_start:pos].lstrip(OPENERS)
        lowered = word.lower()
        if lowered in TITLES or lowered in INLINE_ABBREVIATIONS:
            return _NEVER
        if len(word) == 1 and word.isupper() and word != "I":
            return _NEVER
        if word_start == start and line_start and _LIST_MARKER.fullmatch(word):
            return _NEVER
        if lowered in CLOSING_ABBREVIATIONS or _DOTTED_INITIALISM.fullmatch(word):
            return _IF_CAPITAL
        return _ORDINARY

    def _clause(self, start: int, pos: int, limit: int | None) -> tuple[bool, int] | _Wait | _Force:
        buf = self._buffer
        assert self._min_words is not None
        if _count_words(buf[start : pos + 1]) < self._min_words:
            return False, pos + 1
        if buf[pos] in UNSPACED_CLAUSE_MARKS:
            return True, pos + 1
        end = self._skip(pos + 1, CLOSERS, limit)
        if not isinstance(end, int):
            return end
        return buf[end].isspace(), end

    def _forced_end(self, start: int, limit: int) -> int:
        """Where to cut a chunk that would exceed max_chunk_chars (buf[limit] exists)."""
        buf = self._buffer
        for mark in range(limit - 1, start - 1, -1):
            if buf[mark] in UNSPACED_CLAUSE_MARKS or (
                buf[mark] in SPACED_CLAUSE_MARKS and buf[mark + 1].isspace()
            ):
                return mark + 1
        for space in range(limit, start, -1):
            if buf[space].isspace():
                return space
        return limit


def split_sentences(
    text: str,
    *,
    first_fragment_min_words: int | None = None,
    first_fragment_max_words: int | None = None,
    max_chunk_chars: int | None = None,
) -> list[str]:
    """Chunk a whole string with the same machine (and therefore the same result) as a stream."""
    chunker = IncrementalSentenceChunker(
        first_fragment_min_words=first_fragment_min_words,
        first_fragment_max_words=first_fragment_max_words,
        max_chunk_chars=max_chunk_chars,
    )
    chunks = chunker.feed(text)
    if (rest := chunker.flush()) is not None:
        chunks.append(rest)
    return chunks
