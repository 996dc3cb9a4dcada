"""What a request says beyond its words: SSML, or Kokoro-FastAPI's inline pronunciations, read into runs.

A text that starts with `<speak` (after an XML declaration, if any) is SSML; the subset read (Amazon
Polly's and the W3C's names):
- `<speak>`: the root; nothing but white space after it closes.
- `<break time="500ms"/>` (or `"1.5s"`; or `strength`: none, x-weak, weak, medium, strong, x-strong):
  that much silence, at most MAX_BREAK_MS, measured between the sounds on either side (the scheduler
  trims the model's own silence there, `tts/scheduling/pauses.py`).
- `<phoneme alphabet="ipa" ph="...">word</phoneme>`: the word said as `ph` (IPA or Kokoro's symbols;
  `alphabet` ipa, or absent; another alphabet is refused, as its `ph` would be misread).
- `<sub alias="World Wide Web">WWW</sub>`: the alias is said.
- `<say-as interpret-as="characters|spell-out|digits|telephone|date|cardinal|ordinal">`: letters and
  digits one by one, a phone number in its groups, a date's month by name (`format`: mdy, dmy, ymd, md,
  dm, ym, my, y, m, d; English month names in English, the numbers elsewhere); another kind reads its
  text.
- `<prosody rate="slow|x-slow|medium|fast|x-fast|80%|+20%|1.2">`: the speed of what it holds, times
  the request's (the product kept within the model's 0.5-2.0); other attributes are ignored.
- Anything else (`<p>`, `<s>`, `<emphasis>`, `<lang>`, `<mark/>`, `<audio>`, a vendor's element) is
  read as its text, never aloud as markup; `<p>` and `<s>` end a sentence. Comments, `<?xml ...?>`
  and CDATA are XML's; a DOCTYPE is refused (no entities are defined); `&amp;` `&lt;` `&gt;` `&quot;`
  `&apos;` and numeric references are decoded.

Otherwise the text is the agent's own (markdown and all, for `speech_text`), where
`[word](/phonemes/)` says the word as the phonemes (Kokoro-FastAPI's and misaki's inline form) when they
hold an IPA symbol or a stress mark (`/wˈɪn/`): all ASCII, `[the guide](/guide/)` is a markdown link
to a site's path, read as its text.

`read_markup` returns the text as `Run`s: each what was written (what word timings name), and what is
said instead (an alias, a say-as reading) or the phonemes given, at a speed, after a pause. Bad markup
(an element left open or closed out of turn, an unknown break time or rate, too deep a nesting, a
phoneme Kokoro lacks) is a `MarkupError` with a stable code and the position; the scan is one pass,
each character looked at a bounded number of times, so hostile input costs linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tts.text.phonemes import UnknownPhoneme, kokoro_phonemes
from tts.text.say_as import SAY_AS, SayAsError, say_as

MAX_BREAK_MS = 10_000
"""Amazon Polly's limit for one `<break>`: longer silence is the client's to make."""
MAX_DEPTH = 32
BREAK_STRENGTHS = {"none": 0, "x-weak": 100, "weak": 250, "medium": 400, "strong": 700, "x-strong": 1000}
RATES = {"x-slow": 0.6, "slow": 0.8, "medium": 1.0, "fast": 1.25, "x-fast": 1.5}
_TIME = re.compile(r"(\d{1,6}(?:\.\d{1,3})?)\s*(ms|s)")
_RATE = re.compile(r"([+-]?)(\d{1,4}(?:\.\d{1,3})?)(%?)")
_NAME = re.compile(r"[A-Za-z_][\w.:-]*")
_ATTRIBUTE = re.compile(r"([A-Za-z_][\w.:-]*)\s*=\s*")
_SPACE = re.compile(r"\s*")
_ENTITY = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6}));")
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_SSML = re.compile(r"\s*(?:<\?xml[^>]*>\s*)?<speak[\s>/]")
_INLINE = re.compile(r"\[([^\[\]\n]{1,100})\]\(/([^/\n()]{0,255}[^\x00-\x7f/\n()][^/\n()]{0,255})/\)")
_SENTENCE_ELEMENTS = ("p", "s")
_HOLDS_TEXT_ONLY = ("phoneme", "sub", "say-as")


class MarkupError(ValueError):
    """Markup the container cannot read; `code` is a stable protocol error code."""

    def __init__(self, message: str, code: str = "invalid_ssml") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Run:
    """A piece of the request: `written` is what the client wrote there (without markup), which word
    timings name; it is said as `phonemes` when given, else as `said` when given, else as written."""

    written: str
    said: str | None = None
    phonemes: str | None = None
    rate: float = 1.0
    pause_ms: int = 0
    """Silence before the run's sound (a `<break>`): a run with no words is a pause alone."""


def read_markup(text: str, lang: str) -> tuple[Run, ...]:
    """The request's text as runs: SSML when it starts with `<speak`, else plain text with inline
    `[word](/phonemes/)` pronunciations. MarkupError for bad markup."""
    if _SSML.match(text):
        return _Ssml(text, lang).runs()
    runs: list[Run] = []
    done = 0
    for match in _INLINE.finditer(text):
        runs += [Run(text[done : match.start()]), Run(match[1], phonemes=_phonemes(match[2], lang, match))]
        done = match.end()
    runs.append(Run(text[done:]))
    return tuple(run for run in runs if run.written)


def _phonemes(written: str, lang: str, where: re.Match[str] | int) -> str:
    position = where if isinstance(where, int) else where.start()
    try:
        return kokoro_phonemes(written, lang)
    except UnknownPhoneme as error:
        raise MarkupError(f"at character {position}: {error}", "unknown_phoneme") from None


def _decoded(text: str) -> str:
    def entity(match: re.Match[str]) -> str:
        if match[1]:
            return _ENTITIES[match[1]]
        code = int(match[2]) if match[2] else int(match[3], 16)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else " "

    return _ENTITY.sub(entity, text)


def break_ms(attributes: dict[str, str], position: int) -> int:
    """A `<break>`'s silence: its `time`, else its `strength`, else medium's."""
    if "time" in attributes:
        match = _TIME.fullmatch(attributes["time"].strip())
        if match is None:
            raise MarkupError(
                f'at character {position}: break time {attributes["time"][:20]!r} is not "500ms" or "1.5s"'
            )
        ms = float(match[1]) * (1000 if match[2] == "s" else 1)
        if ms > MAX_BREAK_MS:
            raise MarkupError(f"at character {position}: a break is at most {MAX_BREAK_MS} ms, not {ms:.0f}")
        return round(ms)
    strength = attributes.get("strength", "medium")
    if strength not in BREAK_STRENGTHS:
        raise MarkupError(
            f"at character {position}: break strength {strength[:20]!r} is not one of "
            + ", ".join(BREAK_STRENGTHS)
        )
    return BREAK_STRENGTHS[strength]


def prosody_rate(value: str, position: int) -> float:
    """A `<prosody rate>` as a factor of the speed around it."""
    value = value.strip()
    if value in RATES:
        return RATES[value]
    match = _RATE.fullmatch(value)
    if match is None:
        raise MarkupError(
            f"at character {position}: prosody rate {value[:20]!r} is not a word, a percentage or a number"
        )
    number = float(match[2]) / (100 if match[3] else 1)
    if match[1]:  # "+20%": relative
        number = 1 + number if match[1] == "+" else 1 - number
    if number <= 0:
        raise MarkupError(f"at character {position}: prosody rate {value!r} is not above 0")
    return number


MAX_TOTAL_BREAK_MS = 60_000
"""All a request's breaks together: a minute of silence; more is a client's to make, not 96 MB of PCM."""


@dataclass
class _Element:
    name: str
    position: int
    rate: float
    attributes: dict[str, str]
    held: list[str] | None = None  # the text of an element that holds text only (phoneme, sub, say-as)


class _Ssml:
    """One pass over an SSML document (`read_markup`'s docstring): elements on a stack, text into runs."""

    def __init__(self, text: str, lang: str) -> None:
        self._text = text
        self._lang = lang
        self._stack: list[_Element] = []
        self._runs: list[Run] = []
        self._buffer: list[str] = []
        self._buffer_rate = 1.0
        self._pause_ms = 0
        self._paused_ms = 0
        self._closed = False  # the root `</speak>` was read

    def runs(self) -> tuple[Run, ...]:
        text, at = self._text, 0
        while at < len(text):
            opening = text.find("<", at)
            if opening < 0:
                self._characters(text[at:], at)
                break
            self._characters(text[at:opening], at)
            at = self._markup(opening)
        if self._stack:
            element = self._stack[-1]
            raise MarkupError(f"<{element.name}> opened at character {element.position} is not closed")
        self._flush()
        if self._pause_ms:
            self._runs.append(Run("", pause_ms=self._pause_ms))
        return tuple(self._runs)

    @property
    def _rate(self) -> float:
        return self._stack[-1].rate if self._stack else 1.0

    def _characters(self, chunk: str, position: int) -> None:
        if not chunk:
            return
        if self._closed or not self._stack:
            if chunk.strip():
                raise MarkupError(f"at character {position}: text outside <speak>")
            return
        decoded = _decoded(chunk)
        held = self._stack[-1].held
        if held is not None:
            held.append(decoded)
            return
        if self._buffer and self._buffer_rate != self._rate:
            self._flush()
        self._buffer_rate = self._rate
        self._buffer.append(decoded)

    def _flush(self) -> None:
        written = "".join(self._buffer)
        self._buffer = []
        if written.strip():
            self._emit(Run(written, rate=self._buffer_rate))

    def _emit(self, run: Run) -> None:
        self._runs.append(replace(run, pause_ms=self._pause_ms))
        self._pause_ms = 0

    def _markup(self, at: int) -> int:
        """Read the markup that starts at `at` (a `<`); where the text goes on."""
        text = self._text
        for opener, closer in (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>")):
            if text.startswith(opener, at):
                end = text.find(closer, at + len(opener))
                if end < 0:
                    raise MarkupError(f"{opener} at character {at} is not closed with {closer}")
                if opener == "<![CDATA[":
                    self._characters(text[at + len(opener) : end].replace("&", "&amp;"), at)
                return end + len(closer)
        if text.startswith("<!", at):
            raise MarkupError(f"at character {at}: declarations (<!DOCTYPE>, <!ENTITY>) are not read")
        end = text.find(">", at)
        inner = text.find("<", at + 1, end if end >= 0 else len(text))
        if end < 0 or inner >= 0:
            raise MarkupError(f"at character {at}: '<' opens no tag (write &lt; for the character)")
        body = text[at + 1 : end]
        if body.startswith("/"):
            self._close(body[1:].strip(), at)
        else:
            name, attributes, empty = _tag(body, at)
            self._open(name, attributes, at)
            if empty:
                self._close(name, at)
        return end + 1

    def _open(self, name: str, attributes: dict[str, str], at: int) -> None:
        if self._closed or (not self._stack and name != "speak"):
            raise MarkupError(f"at character {at}: <{name}> outside <speak>")
        if self._stack and self._stack[-1].held is not None:
            raise MarkupError(f"at character {at}: <{self._stack[-1].name}> holds text only, not <{name}>")
        if len(self._stack) >= MAX_DEPTH:
            raise MarkupError(f"at character {at}: elements nest deeper than {MAX_DEPTH}")
        rate = self._rate
        if name == "break":
            self._flush()
            self._pause_ms += break_ms(attributes, at)
            self._paused_ms += break_ms(attributes, at)
            if self._paused_ms > MAX_TOTAL_BREAK_MS:
                raise MarkupError(
                    f"at character {at}: the breaks add up to more than {MAX_TOTAL_BREAK_MS} ms"
                )
        elif name == "prosody" and "rate" in attributes:
            rate *= prosody_rate(attributes["rate"], at)
        elif name == "phoneme" and attributes.get("alphabet", "ipa") not in ("ipa", "x-kokoro"):
            raise MarkupError(
                f"at character {at}: phoneme alphabet {attributes['alphabet'][:20]!r}; ipa is read"
            )
        required = {"phoneme": "ph", "sub": "alias", "say-as": "interpret-as"}.get(name)
        if required is not None and required not in attributes:
            raise MarkupError(f"at character {at}: <{name}> needs {required}=")
        elif name in _SENTENCE_ELEMENTS:
            self._end_sentence()
        held = [] if name in _HOLDS_TEXT_ONLY else None
        self._stack.append(_Element(name, at, rate, attributes, held))

    def _end_sentence(self) -> None:
        """A paragraph or sentence element begins or ends: the text before it ends a sentence."""
        if "".join(self._buffer).strip():
            self._buffer.append(" .")
            self._flush()

    def _close(self, name: str, at: int) -> None:
        if not self._stack:
            raise MarkupError(f"at character {at}: </{name}> closes nothing")
        element = self._stack[-1]
        if element.name != name:
            raise MarkupError(
                f"at character {at}: </{name}> closes <{element.name}> opened at character {element.position}"
            )
        self._stack.pop()
        if element.held is not None:
            self._held(element, "".join(element.held), at)
        elif name in _SENTENCE_ELEMENTS:
            self._end_sentence()
        if not self._stack:
            self._closed = True

    def _held(self, element: _Element, content: str, at: int) -> None:
        """The run of a `<phoneme>`, `<sub>` or `<say-as>` just closed."""
        written = " ".join(content.split())
        if not written:
            raise MarkupError(f"at character {element.position}: <{element.name}> holds no text")
        attributes = element.attributes
        self._flush()
        if element.name == "phoneme":
            run = Run(written, phonemes=_phonemes(attributes["ph"], self._lang, element.position))
        elif element.name == "sub":
            run = Run(written, said=attributes["alias"])
        elif attributes["interpret-as"] in SAY_AS:
            try:
                said = say_as(attributes["interpret-as"], written, attributes.get("format"), self._lang)
            except SayAsError as error:
                raise MarkupError(f"at character {element.position}: {error}") from None
            run = Run(written, said=said)
        else:
            run = Run(written)
        self._emit(replace(run, rate=element.rate))


def _tag(body: str, at: int) -> tuple[str, dict[str, str], bool]:
    """A start tag's name, attributes and whether it is empty (`<break/>`); linear in the tag."""
    empty = body.endswith("/")
    if empty:
        body = body[:-1]
    name = _NAME.match(body)
    if name is None:
        raise MarkupError(f"at character {at}: '<' opens no tag (write &lt; for the character)")
    attributes: dict[str, str] = {}
    position = name.end()
    while (position := _SPACE.match(body, position).end()) < len(body):
        attribute = _ATTRIBUTE.match(body, position)
        quote = body[attribute.end()] if attribute is not None and attribute.end() < len(body) else ""
        if attribute is None or quote not in ("'", '"'):
            raise MarkupError(f"at character {at + 1 + position}: <{name[0]}> has a malformed attribute")
        closing = body.find(quote, attribute.end() + 1)
        if closing < 0:
            raise MarkupError(f"at character {at + 1 + position}: an attribute's value is not closed")
        attributes[attribute[1]] = _decoded(body[attribute.end() + 1 : closing])
        position = closing + 1
    return name[0], attributes, empty
