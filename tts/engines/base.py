"""What every engine shares: the interface the container sees, the one feature type, and the synthesis
rules that do not depend on the engine.

An engine turns a request's script into phoneme-token segments (`speech_segments`: markup, lexicon and G2P in
`tts/text/script.py` and `tts/text/g2p.py`, at most 510 tokens each, cut at clause boundaries, each with
its speed and the pause before it) and one segment into float32 audio at 24 kHz: `features` (the text
side) then `decode` (the decoder over any run of the segment's frames; `window_decoder` stitches the
runs it is given into one stream, `decode.py`). Asked for word timings, each segment also says which
written word each phoneme token is heard as, and `Features.durations` how long each lasts
(`tts/text/timings.py`). The scheduler sees only this interface, so both engines get the same
scheduling, cancel, window and segment rules.

Style row: the voice pack row is picked by token count the way the model's authors do (hexgrad's
KPipeline: `pack[len(phonemes) - 1]`; kokoro-onnx 0.6.1, the peer in the benchmarks, does the same).
One row off changes the waveform, so every engine uses `style_row`.

Device: `TTS_PROVIDER` (cpu, cuda, auto) means the same for both engines; `choose_device` is the rule,
each engine says only whether its runtime sees CUDA.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Protocol

import numpy as np

from tts.engines.decode import WindowDecoder
from tts.text.g2p import Phonemizer
from tts.text.script import Script, Segment, script_segments
from tts.text.timings import MappingCancelled
from tts.voices import blend_pack

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


@dataclass(frozen=True)
class Features[Array]:
    """The text side's output for one segment: what the decoder needs, aligned to output frames (600
    samples each). `Array` is the engine's tensor type (numpy arrays on onnxruntime, torch tensors on
    torch); the names are hexgrad's `KModel.forward_with_tokens` hand-over to its decoder."""

    asr: Array  # [1, 512, frames] text-encoder features aligned to the predicted durations
    f0: Array  # [1, 2 * frames] pitch curve
    energy: Array  # [1, 2 * frames] energy curve (hexgrad's `N`)
    style: Array  # [1, 256] the style row; the decoder reads its first 128 values
    source_phase: np.ndarray  # [2 * frames + 1, 9] float64: harmonic phase (turns / 300) before each F0 step
    durations: np.ndarray  # [tokens + 2] int64: frames per token, the two pads included; sums to `frames`

    @property
    def frames(self) -> int:
        return self.asr.shape[-1]


@dataclass(frozen=True)
class Window[Array]:
    """One decoder window: frames [start, stop) of a segment's `features` (its context included), for
    the job whose `run_flag` cancels it. The windows of one `decode_batch` call may come from any
    sessions."""

    features: Features[Array]
    start: int
    stop: int
    run_flag: RunFlag | None = None

    @property
    def frames(self) -> int:
        return self.stop - self.start

    @property
    def cancelled(self) -> bool:
        return self.run_flag is not None and self.run_flag.terminate


def style_row(pack: np.ndarray, n_tokens: int) -> np.ndarray:
    """The style vector [1, 256] for a segment of `n_tokens` phoneme tokens: hexgrad's `pack[n - 1]`."""
    return pack[min(n_tokens, len(pack)) - 1].reshape(1, 256).astype(np.float32, copy=False)


def choose_device(provider: str, *, cuda_present: bool, missing: str) -> Literal["cuda", "cpu"]:
    """`TTS_PROVIDER` for an engine whose runtime does (`cuda_present`) or does not see CUDA: `cuda`
    (required: raises, naming what is `missing`), `cpu`, or `auto` (cuda when present)."""
    if provider == "cuda" and not cuda_present:
        raise RuntimeError(f"TTS_PROVIDER=cuda but {missing}")
    return "cuda" if provider in {"cuda", "auto"} and cuda_present else "cpu"


class SpeechEngine[Array](ABC):
    """The interface the scheduler, the server and the tools use."""

    name: str
    voices: dict[str, np.ndarray]
    load_seconds: float
    lanes: int = 1  # windows `decode_windows` runs side by side
    batch: int = 1  # windows `decode_batch` runs in one forward pass (1: one after another, on the lanes)

    def __init__(self, vocab: dict[str, int], english: str = "espeak") -> None:
        self._vocab = vocab
        self._english = english

    @cached_property
    def phonemizer(self) -> Phonemizer:
        """The phonemizer (English through `english`), loaded on first use: an engine given phoneme tokens
        decodes without it."""
        return Phonemizer(self._english)

    @property
    @abstractmethod
    def device(self) -> str:
        """Where the forward pass runs, e.g. `CPUExecutionProvider`, `cpu`, `cuda:0`."""

    @abstractmethod
    def run_flag(self) -> RunFlag:
        """A fresh cancel flag for one job's forward passes."""

    @abstractmethod
    def features(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> Features[Array]:
        """The text side of one segment (a few percent of the work): what the decoder needs for every
        frame."""

    @abstractmethod
    def decode(
        self,
        features: Features[Array],
        start: int = 0,
        stop: int | None = None,
        run_flag: RunFlag | None = None,
    ) -> np.ndarray:
        """Audio of frames [start, stop) (default: all), decoded from those frames alone, the harmonic
        source's phase carried over from the frames before `start`."""

    def decode_windows(
        self, features: Features[Array], ranges: list[tuple[int, int]], run_flag: RunFlag | None = None
    ) -> list[np.ndarray]:
        """`decode` of each frame range; an engine with several decoder lanes runs them side by side."""
        return [self.decode(features, start, stop, run_flag) for start, stop in ranges]

    def decode_batch(self, windows: Sequence[Window[Array]]) -> list[np.ndarray | None]:
        """Each window's audio, as `decode` gives it alone, for windows of any segments of any sessions:
        None for a window whose run flag is set (its job was cancelled; the others go on). Raises
        SynthesisCancelled when every window's is. This engine decodes them one after another; one with
        `batch` > 1 in forward passes of up to that many windows."""
        results: list[np.ndarray | None] = []
        for window in windows:
            try:
                results.append(
                    None
                    if window.cancelled
                    else self.decode(window.features, window.start, window.stop, window.run_flag)
                )
            except SynthesisCancelled:
                results.append(None)
        if windows and all(result is None for result in results):
            raise SynthesisCancelled()
        return results

    def window_decoder(
        self, features: Features[Array], context_frames: int, run_flag: RunFlag | None = None
    ) -> WindowDecoder:
        """The segment's audio from the runs of frames it is then given, each decoded with
        `context_frames` on either side and stitched (`decode.py`)."""
        return WindowDecoder(
            lambda ranges: self.decode_windows(features, ranges, run_flag), features.frames, context_frames
        )

    def voice_pack(self, voice: str) -> np.ndarray:
        """The [510, 256] style pack of a loaded voice or of a blend of them (`tts/voices.py`: the
        weighted average of its parts' packs; a few microseconds, so computed per segment)."""
        return blend_pack(self.voices, voice)

    def synthesize(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> np.ndarray:
        """Whole-segment synthesis: the text side, then the decoder over every frame at once. Raises
        SynthesisCancelled once `run_flag.terminate` is set from another thread."""
        return self.decode(self.features(tokens, voice, speed, run_flag), run_flag=run_flag)

    def _phonemes(self, text: str, lang: str) -> str:
        """The G2P of `text`, kept to the characters the model has tokens for."""
        return "".join(ch for ch in self.phonemizer.phonemize(text, lang) if ch in self._vocab)

    def speech_segments(
        self, script: Script, lang: str, timed: bool = False, run_flag: RunFlag | None = None
    ) -> list[Segment]:
        """The script's segments (`tts/text/script.py`), with `timed` the written word each token is
        heard as. Setting `run_flag.terminate` stops the word mapping within a few hundred characters of
        work: `SynthesisCancelled`."""
        flag = run_flag or CancelFlag()
        try:
            return script_segments(
                script,
                lang,
                lambda text: self._phonemes(text, lang),
                self._vocab,
                timed,
                lambda: flag.terminate,
            )
        except MappingCancelled as cancelled:
            raise SynthesisCancelled(str(cancelled)) from cancelled

    def segments(self, text: str, lang: str) -> list[list[int]]:
        """The token lists of a plain text (the tools', the calibration's): `speech_segments` without
        markup."""
        return [list(segment.tokens) for segment in self.speech_segments(Script.plain(text), lang)]

    def speak(self, text: str, voice: str, speed: float = 1.0, lang: str = "en-us") -> np.ndarray:
        """Whole text to audio, segment after segment (for tools and benchmarks, not the server path)."""
        parts = [self.synthesize(tokens, voice, speed) for tokens in self.segments(text, lang)]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def warm_up(self, voice: str) -> float:
        """Run one short synthesis so the first real request does not pay for lazy initialisation."""
        started = time.perf_counter()
        self.speak(WARMUP_TEXT, voice)
        return time.perf_counter() - started
