"""SSML's `<say-as>`: a piece of text read as characters, digits, a phone number, a date or a number.

Each reading is text again, for the G2P: letters and digits spelled one by one (`AWS` -> `A. W. S.`: a
full stop after each keeps a letter a letter, not the article `a`), a phone number's digits in their
groups (`555-1234` -> `5 5 5, 1 2 3 4`), a date's month by its English name in English (`2024-03-05`
-> `March 5th, 20 24`, the year in two pairs as it is said) and its numbers in the order written
elsewhere. Anything a reading cannot take (a date that is no date) is a `SayAsError`.
"""

from __future__ import annotations

import re

from tts.text.phonemes import english

SAY_AS = (
    "characters",
    "spell-out",
    "verbatim",
    "digits",
    "telephone",
    "date",
    "cardinal",
    "number",
    "ordinal",
)
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
DATE_FORMATS = ("mdy", "dmy", "ymd", "md", "dm", "ym", "my", "y", "m", "d")
_NUMBERS = re.compile(r"\d+")


class SayAsError(ValueError):
    """Text a `<say-as>` reading cannot take."""


def _spelled(text: str) -> str:
    return " ".join(f"{ch.upper()}." if ch.isalpha() else ch for ch in text if ch.isalnum())


def _ordinal(number: int) -> str:
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th') }"


def _year(year: int) -> str:
    """A year as English says it: 1984 `19 84`, 2024 `20 24`, 1905 `19 oh 5`, 1900 `19 hundred`; the
    years 2000-2009 and any outside 1100-9999 as the number."""
    if not 1100 <= year <= 9999 or 2000 <= year <= 2009:
        return str(year)
    century, rest = divmod(year, 100)
    if rest == 0:
        return f"{century} hundred"
    return f"{century} oh {rest}" if rest < 10 else f"{century} {rest}"


def _date(text: str, fmt: str | None, lang: str) -> str:
    numbers = [int(n) for n in _NUMBERS.findall(text)]
    if fmt is None:
        fmt = "ymd" if re.match(r"\s*\d{4}\D", text) else ("mdy" if lang.lower() == "en-us" else "dmy")
    fmt = fmt.lower()
    if fmt not in DATE_FORMATS:
        raise SayAsError(f"date format {fmt[:10]!r} is not one of {', '.join(DATE_FORMATS)}")
    if len(numbers) != len(fmt):
        raise SayAsError(f"{text[:40]!r} is not a date in the format {fmt}")
    parts = dict(zip(fmt, numbers, strict=True))
    if not 1 <= parts.get("m", 1) <= 12 or not 1 <= parts.get("d", 1) <= 31:
        raise SayAsError(f"{text[:40]!r} has no month {parts.get('m')} or day {parts.get('d')}")
    if not english(lang):
        return " ".join(str(parts[field]) for field in fmt)
    said = {
        "m": MONTHS[parts.get("m", 1) - 1],
        "d": _ordinal(parts.get("d", 1)),
        "y": _year(parts.get("y", 0)),
    }
    order = [field for field in "mdy" if field in fmt]
    if order == ["m", "d", "y"]:
        return f"{said['m']} {said['d']}, {said['y']}"
    return " ".join(said[field] for field in order)


def _telephone(text: str, lang: str) -> str:
    groups = [" ".join(group) for group in _NUMBERS.findall(text)]
    if not groups:
        raise SayAsError(f"{text[:40]!r} has no digits")
    plus = "plus " if text.strip().startswith("+") and english(lang) else ""
    return plus + ", ".join(groups)


def say_as(kind: str, text: str, fmt: str | None, lang: str) -> str:
    """`text` as `<say-as interpret-as=kind>` reads it (`kind` one of SAY_AS)."""
    if kind in ("characters", "spell-out", "verbatim"):
        return _spelled(text)
    if kind == "digits":
        return " ".join(ch for ch in text if ch.isdigit()) or text
    if kind == "telephone":
        return _telephone(text, lang)
    if kind == "date":
        return _date(text, fmt, lang)
    if kind == "ordinal" and english(lang):
        return _NUMBERS.sub(lambda m: _ordinal(int(m[0])), text)
    return re.sub(r"(?<=\d),(?=\d{3})", "", text)  # cardinal, number: the number without separators
