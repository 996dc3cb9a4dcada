"""What every engine shares, and the choice between them (`TTS_ENGINE=onnx|torch|auto`).

An engine turns text into phoneme-token segments (espeak-ng G2P, at most 510 tokens each, cut at clause
boundaries) and one segment into float32 audio at 24 kHz: `features` (the text side) then `decode`
(the decoder over any run of the segment's frames), which `windowed` drives one step of windows per
call (tts/windows.py). The scheduler sees only this interface, so both engines get the same round-robin,
cancel, window and segment rules.

The engines (tts/engine.py: the int8 ONNX export, the local default; tts/torch_engine.py: hexgrad's
`kokoro.KModel` on torch) and the choice between them (tts/engines.py, `TTS_ENGINE`) build on it.

Style row: the voice pack row is picked by token count the way the model's authors do (hexgrad's
KPipeline: `pack[len(phonemes) - 1]`; kokoro-onnx 0.6.1, the peer in the benchmarks, does the same).
One row off changes the waveform, so every engine uses `style_row`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tts.config import MAX_PHONEME_TOKENS
from tts.g2p import Phonemizer, split_tokens
from tts.windows import SAMPLES_PER_FRAME, WindowedDecode, WindowPlan

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
    window_plan: WindowPlan

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
    def features(self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None) -> Any:
        """The text side of one segment (a few percent of the work): what the decoder needs for every
        frame. The result has `frames`."""

    @abstractmethod
    def decode(
        self, features: Any, start: int = 0, stop: int | None = None, run_flag: RunFlag | None = None
    ) -> np.ndarray:
        """Audio of frames [start, stop) (default: all), decoded from those frames alone, the harmonic
        source's phase carried over from the frames before `start`."""

    def decode_windows(
        self, features: Any, ranges: list[tuple[int, int]], run_flag: RunFlag | None = None
    ) -> list[np.ndarray]:
        """`decode` of each frame range; an engine with several decoder lanes runs them side by side."""
        return [self.decode(features, start, stop, run_flag) for start, stop in ranges]

    def windowed(
        self, features: Any, run_flag: RunFlag | None = None, plan: WindowPlan | None = None
    ) -> WindowedDecode:
        """The segment's audio, step by step (`plan` defaults to the configured one)."""
        return WindowedDecode(
            lambda ranges: self.decode_windows(features, ranges, run_flag),
            features.frames,
            SAMPLES_PER_FRAME,
            plan or self.window_plan,
        )

    def synthesize(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> np.ndarray:
        """Whole-segment synthesis: the text side, then the decoder over every frame at once. Raises
        SynthesisCancelled once `run_flag.terminate` is set from another thread."""
        return self.decode(self.features(tokens, voice, speed, run_flag), run_flag=run_flag)

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
