"""What every engine shares, and the choice between them (`TTS_ENGINE=onnx|torch|auto`).

An engine turns text into phoneme-token segments (espeak-ng G2P, at most 510 tokens each, cut at clause
boundaries) and one segment into float32 audio at 24 kHz: `features` (the text side) then `windowed`
(the decoder, one window per call; tts/windows.py). The scheduler sees only this interface, so both
engines get the same round-robin, cancel and segment rules. An engine that does not stream inside a
segment keeps the defaults below: one window, the whole forward pass.

The engines (tts/engine.py: the int8 ONNX export, the local default; tts/torch_engine.py: hexgrad's
`kokoro.KModel` on torch) and the choice between them (tts/engines.py, `TTS_ENGINE`) build on it.

Style row: the voice pack row is picked by token count the way the model's authors do (hexgrad's
KPipeline: `pack[len(phonemes) - 1]`); kokoro-onnx picks one row later. One row off changes the
waveform, so every engine uses `style_row`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tts.config import MAX_PHONEME_TOKENS
from tts.g2p import Phonemizer, split_tokens
from tts.windows import SingleWindow, Windows

WARMUP_TEXT = "Warming up the voice."


class SynthesisCancelled(Exception):
    """A run was terminated on purpose (barge-in)."""


class RunFlag(Protocol):
    """Set `terminate = True` from another thread to cancel a running forward pass
    (onnxruntime's `RunOptions` is one)."""

    terminate: bool


@dataclass
class CancelFlag:
    """The torch engine's `RunFlag`."""

    terminate: bool = False


def style_row(pack: np.ndarray, n_tokens: int) -> np.ndarray:
    """The style vector [1, 256] for a segment of `n_tokens` phoneme tokens: hexgrad's `pack[n - 1]`."""
    return pack[min(n_tokens, len(pack)) - 1].reshape(1, 256).astype(np.float32, copy=False)


class SpeechEngine(ABC):
    """The interface the scheduler, the server and the tools use."""

    name: str
    voices: dict[str, np.ndarray]
    load_seconds: float

    def __init__(self, vocab: dict[str, int]) -> None:
        self._vocab = vocab
        self.phonemizer = Phonemizer()

    @property
    @abstractmethod
    def device(self) -> str:
        """Where the forward pass runs, e.g. `CPUExecutionProvider`, `cpu`, `cuda:0`."""

    @abstractmethod
    def run_flag(self) -> RunFlag:
        """A fresh cancel flag for one job's forward passes."""

    @abstractmethod
    def synthesize(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> np.ndarray:
        """One forward pass; raises SynthesisCancelled once `run_flag.terminate` is set."""

    def features(self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None) -> Any:
        """The text side of one segment: what `windowed` decodes (by default, the request itself)."""
        return tokens, voice, speed

    def windowed(self, features: Any, run_flag: RunFlag | None = None) -> Windows:
        """The segment's audio, window by window (by default one window: the whole forward pass)."""
        tokens, voice, speed = features
        return SingleWindow(lambda: self.synthesize(tokens, voice, speed, run_flag))

    def segments(self, text: str, lang: str) -> list[list[int]]:
        """Phonemize and split into token lists of at most 510 tokens, cut at clause boundaries."""
        phonemes = "".join(ch for ch in self.phonemizer.phonemize(text, lang) if ch in self._vocab)
        return [[self._vocab[ch] for ch in piece] for piece in split_tokens(phonemes, MAX_PHONEME_TOKENS)]

    def speak(self, text: str, voice: str, speed: float = 1.0, lang: str = "en-us") -> np.ndarray:
        """Whole text to audio, segment after segment (for tools and benchmarks, not the server path)."""
        parts = [self.synthesize(tokens, voice, speed) for tokens in self.segments(text, lang)]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def warm_up(self, voice: str) -> float:
        """Run one short synthesis so the first real request does not pay for lazy initialisation."""
        started = time.perf_counter()
        self.speak(WARMUP_TEXT, voice)
        return time.perf_counter() - started
