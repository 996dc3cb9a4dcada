import pytest

from tts.text.g2p import Phonemizer, UnknownLanguage, split_tokens


def test_short_phonemes_stay_one_segment():
    assert split_tokens("həlˈoʊ wˈɜːld.", 510) == ["həlˈoʊ wˈɜːld."]


def test_long_phonemes_split_at_sentence_then_clause_then_space():
    sentence = "ab cd, ef gh. "
    text = sentence * 10
    pieces = split_tokens(text, 40)
    assert all(len(p) <= 40 for p in pieces)
    assert all(p.endswith(".") for p in pieces[:-1]), pieces
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")
    clauses = split_tokens("abc def, " * 10, 30)
    assert all(len(p) <= 30 and p.endswith(",") for p in clauses[:-1])
    words = split_tokens("abcd " * 20, 12)
    assert all(len(p) <= 12 for p in words) and "".join(words).replace(" ", "") == "abcd" * 20
    assert split_tokens("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_espeak_phonemizes_offline_in_english_and_other_languages():
    phonemizer = Phonemizer()
    english = phonemizer.phonemize("Hello world.", "en-us")
    assert "h" in english and "w" in english and english.endswith(".")
    assert phonemizer.phonemize("Bonjour.", "fr-fr") != phonemizer.phonemize("Bonjour.", "en-us")
    with pytest.raises(UnknownLanguage):
        phonemizer.phonemize("Hi.", "xx-zz")
