"""SSML and inline pronunciations read into runs (tts/text/markup.py, say_as.py, phonemes.py): what each
element says and what it is written as; bad markup is a typed error naming where, found in linear time."""

from __future__ import annotations

import contextlib

import pytest

from tests.support.timing import best_of
from tts.text.markup import MAX_BREAK_MS, MAX_DEPTH, MarkupError, Run, read_markup
from tts.text.phonemes import KOKORO_SYMBOLS, UnknownPhoneme, kokoro_phonemes, to_kokoro
from tts.text.say_as import say_as


def test_plain_text_is_one_run_and_inline_pronunciations_are_their_own():
    assert read_markup("Hello **there**.", "en-us") == (Run("Hello **there**."),)
    assert read_markup("Call [Nguyen](/wˈɪn/) today, not [the guide](https://x.io).", "en-us") == (
        Run("Call "),
        Run("Nguyen", phonemes="wˈɪn"),
        Run(" today, not [the guide](https://x.io)."),
    )
    relative = "See [the guide](/guide/) first."
    assert read_markup(relative, "en-us") == (Run(relative),), "all ASCII: a link to a site's path"


def test_ssml_elements_say_what_they_mean_and_keep_what_was_written():
    runs = read_markup(
        '<speak>Hi <break time="500ms"/><phoneme alphabet="ipa" ph="wˈɪn">Nguyen</phoneme> from '
        '<sub alias="World Wide Web">WWW</sub>, <say-as interpret-as="characters">AWS</say-as>. '
        '<prosody rate="slow">Slowly <emphasis>now</emphasis></prosody>&amp; then'
        '<break strength="strong"/></speak>',
        "en-us",
    )
    assert runs == (
        Run("Hi "),
        Run("Nguyen", phonemes="wˈɪn", pause_ms=500),
        Run(" from "),
        Run("WWW", said="World Wide Web"),
        Run(", "),
        Run("AWS", said="A. W. S."),
        Run(". "),
        Run("Slowly now", rate=0.8),
        Run("& then"),
        Run("", pause_ms=700),
    )


def test_comments_declarations_cdata_and_unknown_elements_are_read_as_text_never_as_markup():
    runs = read_markup(
        '<?xml version="1.0"?><speak><!-- a note --><amazon:effect name="whispered">quiet</amazon:effect>'
        '<p>One</p><s>Two</s><![CDATA[a < b]]><mark name="m"/></speak>',
        "en-us",
    )
    said = " ".join(run.written for run in runs)
    assert "<" not in said.replace("a < b", "") and "note" not in said
    assert [run.written.strip() for run in runs] == ["quiet .", "One .", "Two .", "a < b"]


@pytest.mark.parametrize(
    ("kind", "text", "fmt", "said"),
    [
        ("characters", "AWS", None, "A. W. S."),
        ("digits", "1234", None, "1 2 3 4"),
        ("telephone", "+1 (555) 123-4567", None, "plus 1, 5 5 5, 1 2 3, 4 5 6 7"),
        ("date", "2024-03-05", None, "March 5th, 20 24"),
        ("date", "03/05/2024", "dmy", "May 3rd, 20 24"),
        ("date", "1905", "y", "19 oh 5"),
        ("ordinal", "21", None, "21st"),
        ("cardinal", "1,234", None, "1234"),
    ],
)
def test_say_as_readings(kind, text, fmt, said):
    assert say_as(kind, text, fmt, "en-us") == said


def test_a_date_elsewhere_keeps_its_numbers_for_the_languages_own_reading():
    assert say_as("date", "05/03/2024", "dmy", "fr-fr") == "5 3 2024"


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ("<speak>Hi", "invalid_ssml", "<speak> opened at character 0 is not closed"),
        ("<speak>Hi <sub alias='x'>y</speak>", "invalid_ssml", "</speak> closes <sub>"),
        ("<speak>Hi</speak> more", "invalid_ssml", "outside <speak>"),
        ("<speak>a < b</speak>", "invalid_ssml", "write &lt;"),
        ("<speak><break time='5 parsecs'/></speak>", "invalid_ssml", "break time"),
        (f"<speak><break time='{MAX_BREAK_MS + 1}ms'/></speak>", "invalid_ssml", "at most"),
        ("<speak><prosody rate='warp'>x</prosody></speak>", "invalid_ssml", "prosody rate"),
        ("<speak><phoneme ph='wˈɪn☃'>Nguyen</phoneme></speak>", "unknown_phoneme", "☃"),
        ("<speak><phoneme alphabet='x-sampa' ph='w I n'>N</phoneme></speak>", "invalid_ssml", "alphabet"),
        ("<speak><phoneme>Nguyen</phoneme></speak>", "invalid_ssml", "needs ph="),
        ("<speak><sub alias='x'><break/></sub></speak>", "invalid_ssml", "text only"),
        ("<speak><say-as interpret-as='date'>soon</say-as></speak>", "invalid_ssml", "not a date"),
        ("<speak><!DOCTYPE x></speak>", "invalid_ssml", "declarations"),
        ("<speak><!-- open</speak>", "invalid_ssml", "not closed"),
        ("<speak><p a=b>x</p></speak>", "invalid_ssml", "malformed attribute"),
        ("Say [it](/☃/) now", "unknown_phoneme", "☃"),
        ("<speak>" + "<p>" * (MAX_DEPTH + 1) + "</speak>", "invalid_ssml", "deeper"),
    ],
)
def test_bad_markup_is_a_typed_error_naming_where(text, code, where):
    with pytest.raises(MarkupError) as caught:
        read_markup(text, "en-us")
    assert caught.value.code == code
    assert where in str(caught.value)


HOSTILE = {
    "unclosed tags": lambda n: "<speak>" + "<p>" * n,
    "tags never ending": lambda n: "<speak>" + "<p a='1' " * n,
    "attributes": lambda n: "<speak><p " + "a='1' " * n + ">x</p></speak>",
    "an attribute name that never ends": lambda n: "<speak><p " + "a" * n,
    "breaks": lambda n: "<speak>" + "<break time='0ms'/>" * n + "</speak>",
    "entities": lambda n: "<speak>" + "&amp;" * n + "</speak>",
    "comments never closing": lambda n: "<speak>" + "<!--" * n,
    "inline brackets": lambda n: "[a](/" * n,
    "words": lambda n: "<speak>" + "word " * n + "</speak>",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_markup_costs_linear_time(name):
    """Four times the input costs about four times the time (a quadratic scan would cost sixteen; ten
    leaves room for a busy machine)."""
    make = HOSTILE[name]

    def read(n: int) -> None:
        with contextlib.suppress(MarkupError):
            read_markup(make(n), "en-us")

    short = best_of(lambda: read(2_000), times=5)
    long = best_of(lambda: read(8_000), times=5)
    assert long < max(10 * short, 0.05), (name, short, long)


def test_ipa_reads_into_kokoros_symbols_as_misaki_writes_them():
    assert kokoro_phonemes("ˈeɪdʒənt", "en-us") == "ˈAʤənt"
    assert kokoro_phonemes("t͡ʃɝt͡ʃ", "en-us") == "ʧɜɹʧ"
    assert kokoro_phonemes("'kæts", "en-us") == "ˈkæts", (
        "an apostrophe is stress; English has no ts affricate"
    )
    assert kokoro_phonemes("ˈtsaɪt", "de") == "ˈʦIt"
    assert kokoro_phonemes("wˈɪn", "en-us") == "wˈɪn", "Kokoro's own symbols pass through"
    assert to_kokoro("ɡɹˈa^ʊnd ˈo^ʊvɚ", "en-us") == "ɡɹˈWnd ˈOvəɹ"
    assert set(kokoro_phonemes("ðə kwˈɪk bɹˈaʊn fˈɑks", "en-us")) <= KOKORO_SYMBOLS


@pytest.mark.parametrize("written", ["", "   ", "ab☃", "x" * 300, "wˈɪn\u200b"])
def test_a_pronunciation_kokoro_cannot_say_is_refused(written):
    with pytest.raises(UnknownPhoneme):
        kokoro_phonemes(written, "en-us")
