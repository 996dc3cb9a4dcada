"""Grapheme-to-phoneme with espeak-ng from PyPI (`espeakng-loader` ships the library and its data),
and the split of long phoneme strings into segments the model accepts (at most 510 tokens).

espeak-ng is not thread-safe, so one lock guards every call into it. It is loaded by the first
`Phonemizer`, not on import: `split_tokens` and the engines that import this module load without it
(the GPU check's machine has no espeak-ng; its texts come phonemized).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from tts.config import MAX_PHONEME_TOKENS

# Cut preferences for an over-long segment: sentence ends first, then clauses, then any space.
_CUT_CLASSES = (".!?…", ";:", ",—", " ")


# phonemizer warns "words count mismatch" whenever espeak joins words ("of a" is one phoneme word): the
# phonemes are right, and the line came with every sentence the word timings phonemize. Errors still show.
_ESPEAK_LOG = logging.getLogger("tts.text.g2p.espeak")
_ESPEAK_LOG.setLevel(logging.ERROR)
# One lock for the process, not per Phonemizer: espeak-ng's state is global to the library.
_ESPEAK_LOCK = threading.Lock()


class UnknownLanguage(ValueError):
    """The requested espeak-ng language does not exist."""


def _espeak_backend() -> Any:
    """phonemizer's `EspeakBackend`, pointed at the espeak-ng library and data `espeakng-loader` ships."""
    import espeakng_loader
    from phonemizer.backend import EspeakBackend
    from phonemizer.backend.espeak.wrapper import EspeakWrapper

    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
    return EspeakBackend


class Phonemizer:
    def __init__(self) -> None:
        with _ESPEAK_LOCK:
            self._espeak = _espeak_backend()
            self._languages = set(self._espeak.supported_languages())
        self._backends: dict[str, Any] = {}

    @property
    def languages(self) -> set[str]:
        return self._languages

    def _backend(self, lang: str) -> Any:
        if lang not in self._languages:
            raise UnknownLanguage(f"unknown language {lang!r}; espeak-ng knows e.g. en-us, en-gb, fr-fr, es")
        backend = self._backends.get(lang)
        if backend is None:
            backend = self._espeak(
                language=lang,
                preserve_punctuation=True,
                with_stress=True,
                language_switch="remove-flags",
                logger=_ESPEAK_LOG,
            )
            self._backends[lang] = backend
        return backend

    def phonemize(self, text: str, lang: str) -> str:
        with _ESPEAK_LOCK:
            backend = self._backend(lang)
            # phonemizer returns no line at all for an empty text (an IndexError here before)
            return next(iter(backend.phonemize([text], strip=True, njobs=1)), "")


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
