"""Lexicons (tts/text/lexicon.py): the case rules, the request's entries over the endpoint's, the words
said as the entry says and the rest by the G2P; bad lexicons are typed errors found in linear time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.timing import best_of
from tts.text.lexicon import MAX_REQUEST_ENTRIES, LexiconError, load_lexicon, parse_lexicon


def bracketed(text: str) -> str:
    """A stand-in G2P that shows what it was given."""
    return f"<{text.strip()}>"


def test_an_entry_with_a_capital_matches_that_spelling_and_one_in_lower_case_any_case():
    said = parse_lexicon({"Nguyen": "wˈɪn", "us": "ˈʌs", "US": "jˌuˈɛs", "aws": "ˈAws"}).for_language("en-us")
    assert said.lookup("Nguyen") == "wˈɪn"
    assert said.lookup("NGUYEN") is None and said.lookup("nguyen") is None
    assert (said.lookup("US"), said.lookup("us"), said.lookup("Us")) == ("jˌuˈɛs", "ˈʌs", "ˈʌs")
    assert said.lookup("AWS") == said.lookup("Aws") == "ˈAws"


def test_words_of_the_lexicon_are_said_as_it_says_and_the_rest_by_the_g2p():
    said = parse_lexicon({"Nguyen": "wˈɪn", "C++": "sˌipləsplˈʌs", "jane.doe@example.com": "ʤˈAn"})
    say = said.for_language("en-us").say
    assert say("Hello there, Nguyen!", bracketed) == "<Hello there,> wˈɪn<!>"
    assert say("I write C++ and mail jane.doe@example.com.", bracketed) == (
        "<I write> sˌipləsplˈʌs <and mail> ʤˈAn<.>"
    )
    assert say("Nguyen's book and Nguyenx", bracketed) == "<Nguyen's book and Nguyenx>", "whole words only"


def test_the_requests_entries_lie_over_the_endpoints():
    endpoint = parse_lexicon({"Nguyen": "ŋwˈiən", "AWS": "ˌAdˌʌbᵊljuˈɛs"}).for_language("en-us")
    request = parse_lexicon({"Nguyen": "wˈɪn"}).for_language("en-us")
    both = request.over(endpoint)
    assert (both.lookup("Nguyen"), both.lookup("AWS")) == ("wˈɪn", "ˌAdˌʌbᵊljuˈɛs")


def test_ipa_is_read_for_the_language():
    lexicon = parse_lexicon({"eight": "eɪt"})
    assert lexicon.for_language("en-us").lookup("eight") == "At"
    assert lexicon.for_language("fr-fr").lookup("eight") == "At", "misaki's e^ɪ is A in every language"
    assert parse_lexicon({"chat": "tʃat"}).for_language("fr-fr").lookup("chat") == "ʧat"


@pytest.mark.parametrize(
    ("value", "code", "named"),
    [
        (["Nguyen"], "invalid_lexicon", "object"),
        ({"two words": "tˈu"}, "invalid_lexicon", "not one word"),
        ({"": "tˈu"}, "invalid_lexicon", "not one word"),
        ({"-": "tˈu"}, "invalid_lexicon", "not one word"),
        ({"x" * 65: "ɛks"}, "invalid_lexicon", "not one word"),
        ({"Nguyen": 5}, "invalid_lexicon", "string of phonemes"),
        ({f"w{i}": "wˈɪn" for i in range(MAX_REQUEST_ENTRIES + 1)}, "invalid_lexicon", "limit"),
    ],
)
def test_a_bad_lexicon_is_a_typed_error_naming_the_entry(value, code, named):
    with pytest.raises(LexiconError) as caught:
        parse_lexicon(value).for_language("en-us")
    assert caught.value.code == code and named in str(caught.value)


def test_an_unknown_phoneme_names_the_entry_and_the_symbol():
    with pytest.raises(LexiconError) as caught:
        parse_lexicon({"Nguyen": "wˈɪn☃"}).for_language("en-us")
    assert caught.value.code == "unknown_phoneme"
    assert "'Nguyen'" in str(caught.value) and "☃" in str(caught.value)


def test_a_megabyte_lexicon_is_refused_by_its_count_before_any_entry_is_read():
    huge = {f"word{i}": "wˈɜɹd" * 3 for i in range(60_000)}
    assert len(json.dumps(huge)) > 1_000_000

    def refuse() -> None:
        with pytest.raises(LexiconError, match="limit"):
            parse_lexicon(huge)

    assert best_of(refuse, times=3) < 0.01


def test_the_endpoints_file_is_read_and_checked_once(tmp_path: Path):
    path = tmp_path / "lexicon.json"
    path.write_text(json.dumps({"Nguyen": "wˈɪn", "kubectl": "kjˈubkətᵊl"}), encoding="utf-8")
    assert load_lexicon(path).for_language("en-gb").lookup("Nguyen") == "wˈɪn"
    path.write_text(json.dumps({"Nguyen": "wˈɪn☃"}), encoding="utf-8")
    with pytest.raises(LexiconError, match=r"lexicon.json.*☃"):
        load_lexicon(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(LexiconError, match="cannot read"):
        load_lexicon(path)
    with pytest.raises(LexiconError, match="cannot read"):
        load_lexicon(tmp_path / "missing.json")
