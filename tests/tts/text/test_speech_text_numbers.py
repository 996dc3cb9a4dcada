"""Thousands separators with decimals (tts/text/speech_text.py, issue 33 item 4): "1,234.5 km" was said
"1,234 point 5" and heard "1-234.5", a pause where the comma was. Checked with the real G2P: what espeak
says for it is what it says for the same number written without the separator."""

from __future__ import annotations

import pytest

from tts.text.g2p import Phonemizer
from tts.text.speech_text import speech_text


@pytest.fixture(scope="module")
def phonemizer() -> Phonemizer:
    return Phonemizer()


@pytest.mark.parametrize(
    ("written", "control", "heard"),
    [
        ("1,234.5 km", "1234.5 km", "1234 point 5 km"),
        ("12,345.67", "12345.67", "12345 point 6 7"),
        ("It is 1,234,567.89 m.", "It is 1234567.89 m.", "It is 1234567 point 8 9 m."),
    ],
)
def test_a_number_with_thousands_and_decimals_is_said_as_one_number(phonemizer, written, control, heard):
    assert speech_text(written) == speech_text(control) == heard
    phonemes = phonemizer.phonemize(speech_text(written), "en-us")
    assert "," not in phonemes, "no pause inside the number"
    assert "θˈaʊzənd" in phonemes and "pˈɔɪnt" in phonemes  # "... thousand ... point ..."


def test_money_with_thousands_and_cents_stays_money():
    assert speech_text("It costs $1,000.50.") == "It costs 1000 dollars 50 cents."
