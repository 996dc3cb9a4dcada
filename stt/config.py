"""The speech-to-text container's one configuration object, read from the environment (SageMaker passes
`ContainerDefinition.Environment` as plain environment variables)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from facts import STT_PCM_BYTES_PER_S

SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")
# Whisper reads at most 30 s at once (its encoder's window); a longer utterance is cut there.
WHISPER_WINDOW_S = 30
# Silero VAD scores 512-sample chunks at 16 kHz: 32 ms each.
VAD_CHUNK_SAMPLES = 512
VAD_CHUNK_MS = 32


def _env_number[N: (int, float)](name: str, default: N, kind: type[N]) -> N:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"{name} must be {what}, got {raw!r}") from exc


@dataclass(frozen=True)
class STTConfig:
    model_dir: Path | None = None
    """A CTranslate2 Whisper directory; None: Whisper base from its PyPI packages, assembled in cache_dir."""
    cache_dir: Path = Path.home() / ".cache" / "voice-agent-aws"
    device: str = "auto"
    compute_type: str = "int8"
    threads: int = 0
    language: str = "en"
    beam_size: int = 1
    vad_threshold: float = 0.5
    end_of_turn_ms: int = 1800
    """Silence after speech that ends the utterance (the user's turn) whatever the turn model says: how
    long a turn that sounds unfinished ("my number is five five five ...") waits for more. Over 1.5 s, so
    a thinking pause of 0.5-1.5 s inside a question does not cut it (`python -m benchmarks voice_turn`)."""
    turn_check_ms: int = 128
    """Silence after speech at which the final decode starts and the turn model (Smart Turn) is asked
    whether the utterance sounds finished; one that does ends there. Four VAD chunks: past most dips
    between words (one or two chunks), so the decode is rarely wasted mid-sentence."""
    turn_model: str = "smart-turn"
    """`smart-turn`: Pipecat's Smart Turn v3.2 judges each pause (stt/engines/smart_turn.py); `off`: only
    `end_of_turn_ms` of silence ends a turn."""
    turn_complete: float = 0.5
    """Smart Turn's probability at or above which a pause ends the turn (its own cut)."""
    min_speech_ms: int = 200
    """An utterance with less speech than this is a false start (a cough, a click): no final."""
    speech_pad_ms: int = 200
    """Audio kept before the VAD's first speech chunk, so the first word's onset is not cut."""
    partial_interval_ms: int = 400
    """The least time between two partial decodes of one utterance (one decode in flight at most)."""
    max_clip_s: int = 120
    host: str = "127.0.0.1"
    port: int = 8080

    def __post_init__(self) -> None:
        if self.device not in {"auto", "cpu", "cuda"}:
            raise ValueError(f"STT_DEVICE must be auto, cpu or cuda, got {self.device!r}")
        if not 0.05 <= self.vad_threshold <= 0.95:
            raise ValueError(f"STT_VAD_THRESHOLD must be within 0.05-0.95, got {self.vad_threshold}")
        if not 100 <= self.end_of_turn_ms <= 5000:
            raise ValueError(f"STT_END_OF_TURN_MS must be within 100-5000, got {self.end_of_turn_ms}")
        if not 32 <= self.turn_check_ms <= 2000:
            raise ValueError(f"STT_TURN_CHECK_MS must be within 32-2000, got {self.turn_check_ms}")
        if self.turn_model not in {"smart-turn", "off"}:
            raise ValueError(f"STT_TURN_MODEL must be smart-turn or off, got {self.turn_model!r}")
        if not 0.0 < self.turn_complete < 1.0:
            raise ValueError(f"STT_TURN_COMPLETE must be between 0 and 1, got {self.turn_complete}")
        if not 0 <= self.min_speech_ms <= 2000:
            raise ValueError(f"STT_MIN_SPEECH_MS must be within 0-2000, got {self.min_speech_ms}")
        if not 0 <= self.speech_pad_ms <= 1000:
            raise ValueError(f"STT_SPEECH_PAD_MS must be within 0-1000, got {self.speech_pad_ms}")
        if not 100 <= self.partial_interval_ms <= 10_000:
            raise ValueError(
                f"STT_PARTIAL_INTERVAL_MS must be within 100-10000, got {self.partial_interval_ms}"
            )
        if not 1 <= self.beam_size <= 10:
            raise ValueError(f"STT_BEAM_SIZE must be within 1-10, got {self.beam_size}")
        if not 1 <= self.max_clip_s <= 3600:
            raise ValueError(f"STT_MAX_CLIP_S must be within 1-3600, got {self.max_clip_s}")

    @property
    def max_body_bytes(self) -> int:
        """A clip of `max_clip_s` as PCM, and room for a WAV header with extra chunks."""
        return self.max_clip_s * STT_PCM_BYTES_PER_S + 64 * 1024

    @classmethod
    def from_env(cls, **overrides: object) -> STTConfig:
        env = os.environ
        model_dir = env.get("STT_MODEL_DIR") or env.get("SM_MODEL_DIR")
        if not model_dir and (SAGEMAKER_MODEL_DIR / "model.bin").is_file():
            model_dir = str(SAGEMAKER_MODEL_DIR)
        config = cls(
            model_dir=Path(model_dir) if model_dir else None,
            cache_dir=Path(env.get("STT_CACHE_DIR") or cls.cache_dir),
            device=env.get("STT_DEVICE") or cls.device,
            compute_type=env.get("STT_COMPUTE_TYPE") or cls.compute_type,
            threads=_env_number("STT_THREADS", cls.threads, int),
            language=env.get("STT_LANGUAGE") or cls.language,
            beam_size=_env_number("STT_BEAM_SIZE", cls.beam_size, int),
            vad_threshold=_env_number("STT_VAD_THRESHOLD", cls.vad_threshold, float),
            end_of_turn_ms=_env_number("STT_END_OF_TURN_MS", cls.end_of_turn_ms, int),
            turn_check_ms=_env_number("STT_TURN_CHECK_MS", cls.turn_check_ms, int),
            turn_model=env.get("STT_TURN_MODEL") or cls.turn_model,
            turn_complete=_env_number("STT_TURN_COMPLETE", cls.turn_complete, float),
            min_speech_ms=_env_number("STT_MIN_SPEECH_MS", cls.min_speech_ms, int),
            speech_pad_ms=_env_number("STT_SPEECH_PAD_MS", cls.speech_pad_ms, int),
            partial_interval_ms=_env_number("STT_PARTIAL_INTERVAL_MS", cls.partial_interval_ms, int),
            max_clip_s=_env_number("STT_MAX_CLIP_S", cls.max_clip_s, int),
            host=env.get("STT_HOST") or cls.host,
            port=_env_number("STT_PORT", cls.port, int),
        )
        return replace(config, **overrides) if overrides else config
