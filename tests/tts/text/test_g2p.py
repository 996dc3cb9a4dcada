import time

import pytest

from tts.config import TTSConfig
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


def test_english_is_espeaks_plain_ipa_and_the_other_languages_kokoros_single_symbols():
    """English by default is what it was (espeak-ng alone, as kokoro-onnx reads it); elsewhere an
    affricate or a diphthong is one of Kokoro's symbols, as misaki's EspeakG2P wrote its training data."""
    phonemizer = Phonemizer()
    assert phonemizer.phonemize("Hey, a church.", "en-us") == "hˈeɪ, ɐ tʃˈɜːtʃ."
    assert "ʧ" in phonemizer.phonemize("Ciao, ciao.", "it") and "t" not in phonemizer.phonemize("Ciao.", "it")
    assert "ʦ" in phonemizer.phonemize("Pizza.", "it")


def test_misaki_reads_english_in_its_symbols_and_its_time_stays_linear():
    """TTS_G2P=misaki: misaki's own symbols (`A` for the diphthong of "hey"), each word's phonemes kept
    for the word timings; a run of 4,000 dots (minutes in misaki's lexicon search, cubic in a word's
    pieces) is cut into words first."""
    phonemizer = Phonemizer("misaki")
    assert phonemizer.phonemize("Hey, a church.", "en-us") == "hˈA, ɐ ʧˈɜɹʧ."
    assert phonemizer.phonemize_word("church.", "en-us") == "ʧˈɜɹʧ."
    started = time.perf_counter()
    phonemizer.phonemize("https://" + "." * 4000, "en-us")
    assert time.perf_counter() - started < 5
    with pytest.raises(ValueError, match="espeak or misaki"):
        TTSConfig(g2p="epitran")
