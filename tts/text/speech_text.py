"""Speech text: what an agent writes, turned into what a listener should hear.

Language models write markdown, emoji and symbols. Sent to espeak-ng as they are, `**very**` is heard as
"asterisk very asterisk", `#42` as "hash 42", a link as its whole URL, `🎉` as "party popper", and
`2.0` as "two, zero" (the G2P keeps punctuation, so every `.` or `,` inside a number is a pause:
`$1,000` is "dollar one, zero zero zero"). `speech_text(text)` rewrites a text for the ear:

- markdown: emphasis, strikethrough, code spans, headings, list markers, checkboxes, quotes, rules and
  tables lose their marks and keep their words; a code block is not read at all (it is for the eyes);
  a link is read as its text, and a bare URL as its host and path ("example dot com slash guide");
- list items, headings and table rows end with a full stop, so they are spoken and chunked (by the
  agent's sentence chunker) as sentences;
- numbers are kept for espeak, which reads them well, except where punctuation inside them would be a
  pause: decimals and versions ("2 point 0", "3 point 1 4"), thousands separators, money with cents;
- symbols a listener expects as words are words (`&` "and", `#42` "number 42", `C#` "C sharp",
  `→` "to", `~5` "about 5"); every other emoji or pictographic symbol is dropped, as is stray markup.

The rules are the table `RULES`, applied in order; each is a regular expression and what it is said as
(a template or a function of the match). Extend the table, not the code. One rule's output can be
another's input ("-*d" loses its `*` and is a list item), so the table is applied again until the text
stops changing (`MAX_PASSES`): the function is idempotent (what it returns reads the same when passed
through again), so a text that already went through it on the agent can go through it again in the
container. Every rule is linear in its input, whatever it is (no pattern retries a run of characters
from each of its positions: tests/reliability/test_text_fuzz.py); 20,000 characters cost milliseconds.

`MarkdownBlocks` carries the one piece of state a stream of chunks needs: whether a code block is
open (a chunk inside one is not spoken).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

Say = str | Callable[[re.Match[str]], str]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    say: Say
    english: bool
    """It says English words ("number", "point"): applied only where the language is English."""


def _rule(name: str, pattern: str, say: Say, flags: int = 0, *, english: bool = False) -> Rule:
    return Rule(name, re.compile(pattern, flags | re.MULTILINE), say, english)


_ENDS_SPOKEN_SENTENCE = ".!?…:;"


def _as_sentence(words: str) -> str:
    """`words` as a sentence of its own: a full stop unless it already ends with one (or a colon)."""
    words = words.strip()
    return words if not words or words[-1] in _ENDS_SPOKEN_SENTENCE else words + "."


def _table_row(match: re.Match[str]) -> str:
    cells = [cell.strip() for cell in match.group(1).split("|")]
    return _as_sentence(", ".join(cell for cell in cells if cell))


def _url(match: re.Match[str]) -> str:
    """A bare URL, read as a listener would say it: host and path, no scheme, no `www`, no query."""
    url = re.sub(r"^(?:https?://)?(?:www\.)?", "", match.group(0))
    url = re.split(r"[?#]", url)[0].rstrip("/")
    return " " + url.replace(".", " dot ").replace("/", " slash ") + " "


def _digits(digits: str) -> str:
    return " ".join(digits)


def _decimal(match: re.Match[str]) -> str:
    whole, *fractions = match.group(0).split(".")
    if len(fractions) > 1:  # a version: 2.1.3
        return " point ".join([whole, *fractions])
    return f"{whole} point {_digits(fractions[0])}"


_CURRENCIES = {"$": "dollar", "€": "euro", "£": "pound"}


def _money(match: re.Match[str]) -> str:
    unit = _CURRENCIES[match.group("symbol")]
    amount = match.group("amount").replace(",", "")
    said = f"{amount} {unit}{'' if amount == '1' else 's'}"
    cents = match.group("cents")
    if cents and cents != "00":
        said += f" {cents.lstrip('0')} cent{'' if cents == '01' else 's'}"
    return said


# Symbols read as words in English; elsewhere espeak reads them in the text's language.
SYMBOL_WORDS = {
    "&": " and ",
    "→": " to ",
    "⟶": " to ",
    "⇒": " so ",
    "≈": " about ",
    "×": " times ",
    "±": " plus or minus ",
    "≤": " at most ",
    "≥": " at least ",
    "≠": " is not ",
}
# Dropped: So, other symbols (emoji, pictographs, dingbats) but for `°` (espeak reads "20°C" as "twenty
# degrees C"); Sk, modifier symbols (skin tones); Co/Cn, private and unassigned; Cf, the zero-width
# joiner and friends that glue emoji sequences; U+FE0E/U+FE0F, text and emoji presentation.
_DROPPED_CATEGORIES = ("So", "Sk", "Co", "Cn", "Cf")
_KEPT_SYMBOLS = "°"


def _emoji(match: re.Match[str]) -> str:
    return "".join(
        ch
        if ch in _KEPT_SYMBOLS
        or (ch not in "\ufe0e\ufe0f" and unicodedata.category(ch) not in _DROPPED_CATEGORIES)
        else " "
        for ch in match.group(0)
    )


RULES: tuple[Rule, ...] = (
    # blocks, line by line
    _rule("code block", r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", "", re.DOTALL),
    _rule("autolink", r"<((?:https?://|www\.)[^\s<>]+)>", r"\1"),
    _rule("html tag", r"</?[A-Za-z][^<>\n]*>", " "),
    _rule(
        "html entity", r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});", lambda m: html.unescape(m[0])
    ),
    # possessive: the spaces before an optional `|` and those after it are one run (20,000 spaces were
    # tried split at every point, 3.2 s)
    _rule("table rule", r"^[ \t]*+\|?(?:[ \t]*+:?-{3,}+:?[ \t]*+\|)++(?:[ \t]*+:?-{3,}+:?[ \t]*+)?$", ""),
    _rule("table row", r"^[ \t]*\|(.+)\|[ \t]*$", _table_row),
    # greedy to the line's last character that is not a closing `#`: a lazy `(.+?)[ \t#]*$` retried the
    # closing marks at every character (a long heading took 2.6 s)
    _rule("heading", r"^[ \t]{0,3}#{1,6}[ \t]+(.*[^\s#])[ \t#]*$", lambda m: _as_sentence(m.group(1))),
    _rule("rule or underline", r"^[ \t]*(?:[-*_=][ \t]*){3,}$", ""),
    _rule("quote", r"^[ \t]*(?:>[ \t]?)+", ""),
    _rule("checkbox", r"^([ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+)\[[ xX]\][ \t]+", r"\1"),
    # nested markers at once ("- - a"), else each pass would peel one
    _rule("bullet", r"^[ \t]*(?:[-*+•][ \t]+)+(.+)$", lambda m: _as_sentence(m.group(1))),
    _rule("numbered item", r"^[ \t]*(\d{1,3})[.)][ \t]+(.+)$", lambda m: f"{m[1]}. {_as_sentence(m[2])}"),
    # links before emphasis and code, so their text is cleaned by what follows
    # no `[` inside a link's text or target: each `[` then scans only to the next one (with `[^\]]`,
    # 20,000 `[` cost a scan to the line's end each, 6.3 s)
    _rule("image", r"!\[([^\[\]\n]*)\]\([^()\[\n]*\)", r"\1"),
    _rule("link", r"\[([^\[\]\n]+)\]\((?:[^()\s\[]|\([^()\s\[]*\))++(?:[ \t]+\"[^\"\n]*\")?\)", r"\1"),
    _rule("url", r"\b(?:https?://|www\.)[^\s<>()\"']*[^\s<>()\"'.,;:!?]", _url, english=True),
    # an apostrophe typed as a backtick ("Don`t", SmolLM2's at times): a code span's mark is not inside a
    # word, and "stray markup" would leave "Don t"
    _rule("backtick apostrophe", r"(?<=[^\W\d_])`(?=[^\W\d_])", "'"),
    # inline marks
    # Each opening mark is a whole run of marks and the text inside holds no mark, taken possessively:
    # a mark without its closing one then costs a scan to the next mark, not to the line's end (20,000
    # backticks took 13.7 s, " *a" repeated 3.1 s). A nested or longer-running span loses its marks to
    # "stray markup" instead, which says the same words.
    _rule("code span", r"(?<!`)(`++)[ \t]*+([^`\n]*+)(?<=[^`\s])\1(?!`)", r"\2"),
    _rule("strong or emphasis", r"(?<!\*)(\*{1,3}+)(?![\s*])([^*\n]++)(?<=\S)\1(?!\*)", r"\2"),
    _rule("underscore emphasis", r"(?<![\w_])(_{1,3}+)(?![\s_])([^_\n]++)(?<=\S)\1(?![\w_])", r"\2"),
    _rule("strikethrough", r"(?<!~)~~(?![\s~])([^~\n]++)(?<=\S)~~(?!~)", r"\1"),
    # numbers whose inner punctuation espeak would pause at
    _rule(
        "money",
        r"(?P<symbol>[$€£])(?P<amount>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<cents>\d{2}))?(?![\d.,]\d)",
        _money,
        english=True,
    ),
    _rule(
        "thousands",
        r"(?<![\d.,])(\d{1,3})((?:,\d{3})+)(?![\d,])",  # "1,234.5" too: "1234.5" is a decimal next
        lambda m: m[1] + m[2].replace(",", ""),
        english=True,
    ),
    _rule("version prefix", r"\bv(?=\d+\.\d)", "version ", english=True),
    _rule("decimal or version", r"(?<![\d.])\d+(?:\.\d+)+(?!\d|\.\d)", _decimal, english=True),
    # symbols
    _rule("number sign", r"(?<![\w&#])#(\d+)\b", r"number \1", english=True),
    _rule("sharp", r"\b([A-Ga-g])#(?!\w)", r"\1 sharp", english=True),
    _rule("about", r"(?<!\S)~(?=\d)", "about ", english=True),
    # from the first space of a run only: 20,000 spaces are one attempt, not 20,000
    _rule("arrow", r"(?<![ \t])[ \t]++(?:->|=>|-->)[ \t]+", " to ", english=True),
    # "1-2 cups", "7–9 hours" (espeak says "1 dash 2"); not phone numbers (555-1234) or dates (2026-12-01)
    _rule("number range", r"(?<![\w.\-–])(\d{1,3})[-–](\d{1,3})(?![\w.\-–])", r"\1 to \2", english=True),
    _rule("symbol words", "[" + "".join(SYMBOL_WORDS) + "]", lambda m: SYMBOL_WORDS[m[0]], english=True),
    _rule("emoji and pictographs", r"[^\w\s.,;:!?'\"()\-–—…%$€£/+=@&]+", _emoji),
    _rule("stray markup", r"[*_`~|<>\[\]{}\\^#]+", " "),
    _rule("spaces", r"[ \t\u00a0]+", " "),
    _rule("space before punctuation", r"(?<! ) +([.,;:!?…])", r"\1"),
    # every run of white space that holds a line break is one "\n" (a line separator as `splitlines` knows
    # them), and the text's edges lose theirs; from a run's first character only, so each run is one try
    _rule(
        "line breaks",
        r"(?<!\s)\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*|\A\s+|(?<!\s)\s+\Z",
        lambda m: "" if m.start() == 0 or m.end() == len(m.string) else "\n",
    ),
)
# A rule's output can be another rule's input ("-*d" -> "- d", a list item; "$2.0" -> "$2 point 0",
# money): the table is applied again until the text stops changing. Each of 20,000 random markdown-ish
# texts (the alphabet of tests/tts/test_speech_text_idempotent.py) settled within 3 passes, seen by a
# 4th that changed nothing; a 5th is to spare.
MAX_PASSES = 5


def rules_for(lang: str) -> tuple[Rule, ...]:
    """The rules that apply to a text in `lang`, in order."""
    return RULES if lang.lower().startswith("en") else _NOT_ENGLISH


_NOT_ENGLISH = tuple(rule for rule in RULES if not rule.english)


def speech_text(text: str, lang: str = "en-us") -> str:
    """`text` as it should be heard in `lang` (an espeak-ng language; see the module docstring); ""
    when nothing in it is for the ear."""
    for _ in range(MAX_PASSES):
        before = text
        for rule in rules_for(lang):
            text = rule.pattern.sub(rule.say, text)
        if text == before:
            break
    return text


class MarkdownBlocks:
    """Speech text for a stream of chunks (the agent's sentences), where a code block can span chunks.

    `speak(chunk)` returns what to say for one chunk: "" for a chunk inside a code block, including the
    lines that open and close it.
    """

    _FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)

    def __init__(self, lang: str = "en-us") -> None:
        self._lang = lang
        self._open: str | None = None

    def speak(self, chunk: str) -> str:
        spoken = []
        rest = chunk
        while rest:
            fence = self._FENCE.search(rest)
            if self._open is None:
                if fence is None:
                    spoken.append(rest)
                    break
                spoken.append(rest[: fence.start()])
                self._open = fence.group(1)
                rest = rest[fence.end() :].partition("\n")[2]
            else:
                if fence is None or fence.group(1) != self._open:
                    break
                self._open = None
                rest = rest[fence.end() :].partition("\n")[2]
        return speech_text("\n".join(spoken), self._lang)
