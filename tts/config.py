"""The container's one configuration object, read from the environment (SageMaker passes
`ContainerDefinition.Environment` as plain environment variables)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from facts import DEFAULT_VOICE

SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")
# Kokoro-82M's shape: a segment is at most 510 phoneme tokens (512 with the two pads), and the decoder
# turns each aligned frame into 600 samples (two F0 steps of 300), 25 ms at 24 kHz.
MAX_PHONEME_TOKENS = 510
SAMPLES_PER_FRAME = 600
# No replica claims more sessions than this (a 1-GPU host computes ~100 s of audio a second; the claim
# is a planning figure, and admitting past it would only lengthen the line): TTS_CAPACITY's bound too.
MAX_CAPACITY = 64


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


@dataclass(frozen=True)
class TTSConfig:
    model_dir: Path | None = None
    cache_dir: Path = Path.home() / ".cache" / "voice-agent-aws"
    voice: str = DEFAULT_VOICE
    lang: str = "en-us"
    threads: int = 0
    frame_ms: int = 100
    max_text_chars: int = 4000
    max_body_bytes: int = 64 * 1024
    send_ahead_ms: int = 0
    provider: str = "auto"
    int8_conv: str = "auto"
    spin: str = "auto"
    engine: str = "onnx"
    workers: int = 1
    capacity: int = 0
    window_first_frames: int = 12
    window_max_frames: int = 120
    window_context_frames: int = 8
    window_growth: int = 4
    window_lanes: int = 0
    batch: int = 0
    cuda_graphs: str = "on"
    host: str = "127.0.0.1"
    port: int = 8080

    def __post_init__(self) -> None:
        if not 20 <= self.frame_ms <= 100:
            raise ValueError(f"TTS_FRAME_MS must be within 20-100 ms, got {self.frame_ms}")
        if self.provider not in {"auto", "cpu", "cuda"}:
            raise ValueError(f"TTS_PROVIDER must be auto, cpu or cuda, got {self.provider!r}")
        if self.int8_conv not in {"auto", "conv", "matmul"}:
            raise ValueError(f"TTS_INT8_CONV must be auto, conv or matmul, got {self.int8_conv!r}")
        if self.spin not in {"auto", "on", "off"}:
            raise ValueError(f"TTS_SPIN must be auto, on or off, got {self.spin!r}")
        if self.send_ahead_ms < 0:
            raise ValueError(f"TTS_SEND_AHEAD_MS must be 0 (off) or more, got {self.send_ahead_ms}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"TTS_MAX_BODY_BYTES must be at least 1024, got {self.max_body_bytes}")
        if self.engine not in {"onnx", "torch", "auto"}:
            raise ValueError(f"TTS_ENGINE must be onnx, torch or auto, got {self.engine!r}")
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
        if not 1 <= self.window_growth <= 16:
            raise ValueError(f"TTS_WINDOW_GROWTH must be within 1-16, got {self.window_growth}")
        if not 0 <= self.window_lanes <= 16:
            raise ValueError(f"TTS_WINDOW_LANES must be within 0 (auto) and 16, got {self.window_lanes}")
        if not 0 <= self.batch <= 256:
            raise ValueError(f"TTS_BATCH must be within 0 (the engine's) and 256 windows, got {self.batch}")
        if self.cuda_graphs not in {"on", "off"}:
            raise ValueError(f"TTS_CUDA_GRAPHS must be on or off, got {self.cuda_graphs!r}")
        if not 0 <= self.window_context_frames <= 50:
            raise ValueError(
                f"TTS_WINDOW_CONTEXT_FRAMES must be within 0-50, got {self.window_context_frames}"
            )

    @classmethod
    def from_env(cls, **overrides: object) -> TTSConfig:
        env = os.environ
        model_dir = env.get("TTS_MODEL_DIR") or env.get("SM_MODEL_DIR")
        if not model_dir and SAGEMAKER_MODEL_DIR.is_dir() and any(SAGEMAKER_MODEL_DIR.iterdir()):
            model_dir = str(SAGEMAKER_MODEL_DIR)
        config = cls(
            model_dir=Path(model_dir) if model_dir else None,
            cache_dir=Path(env.get("TTS_CACHE_DIR") or cls.cache_dir),
            voice=env.get("TTS_VOICE") or cls.voice,
            lang=env.get("TTS_LANG") or cls.lang,
            threads=_env_int("TTS_THREADS", 0),
            frame_ms=_env_int("TTS_FRAME_MS", cls.frame_ms),
            max_text_chars=_env_int("TTS_MAX_TEXT_CHARS", cls.max_text_chars),
            max_body_bytes=_env_int("TTS_MAX_BODY_BYTES", cls.max_body_bytes),
            send_ahead_ms=_env_int("TTS_SEND_AHEAD_MS", cls.send_ahead_ms),
            provider=env.get("TTS_PROVIDER") or cls.provider,
            int8_conv=env.get("TTS_INT8_CONV") or cls.int8_conv,
            spin=env.get("TTS_SPIN") or cls.spin,
            engine=env.get("TTS_ENGINE") or cls.engine,
            workers=_env_int("TTS_WORKERS", cls.workers),
            capacity=_env_int("TTS_CAPACITY", cls.capacity),
            window_first_frames=_env_int("TTS_WINDOW_FIRST_FRAMES", cls.window_first_frames),
            window_max_frames=_env_int("TTS_WINDOW_MAX_FRAMES", cls.window_max_frames),
            window_context_frames=_env_int("TTS_WINDOW_CONTEXT_FRAMES", cls.window_context_frames),
            window_growth=_env_int("TTS_WINDOW_GROWTH", cls.window_growth),
            window_lanes=_env_int("TTS_WINDOW_LANES", cls.window_lanes),
            batch=_env_int("TTS_BATCH", cls.batch),
            cuda_graphs=env.get("TTS_CUDA_GRAPHS") or cls.cuda_graphs,
            host=env.get("TTS_HOST") or cls.host,
            port=_env_int("TTS_PORT", cls.port),
        )
        return replace(config, **overrides) if overrides else config
