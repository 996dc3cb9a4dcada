"""What the window plan, the capacity and the deadlines need to know of this machine, timed at load on
the real engine: the text side (a call and a cost per phoneme token) and the decoder (`speed.py`: a call,
a cost per frame on every thread and per frame on one-thread lanes, and on an engine that batches, per
frame of a forward pass over windows of several sessions), in a few tenths of a second.

Nothing that depends on speed is a constant tuned on one CPU: the first window (`plan.py`'s ramp), the
capacity and the first-audio deadlines (`deadlines.py`) are computed from these figures, and the figures
follow every step and text side the scheduler times afterwards. They are kept per CPU signature (the
CPU model, its vector extensions, the thread count, the engine and its graph) in the cache dir, so
`emulator status` and the capacity planner read what the replica measured; a live replica writes its
moved figures back (`ModelHost`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tts.engines.base import Features, SpeechEngine, Window
from tts.engines.cpu_quota import quota_cores
from tts.scheduling.speed import (
    CPU_BATCH_WINDOWS,
    GPU_BATCH_WINDOWS,
    SPEED_SMOOTHING,
    SPEED_TEXT,
    DecodeSpeed,
)

log = logging.getLogger("tts.scheduling.calibration")

# A short sentence for the text side's fixed cost; SPEED_TEXT (about 90 tokens) gives its cost per token.
SHORT_TEXT = "Timed once."
# The CPU flags that decide the int8 kernels onnxruntime runs (conv_matmul.py): part of the signature.
SIGNATURE_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


@dataclass
class TextSpeed:
    """How long the text side (the ONNX text graph: BERT, duration and F0 predictors) takes for one
    segment of `n` phoneme tokens: `call_s + token_s * n`; `observe` follows what segments take."""

    call_s: float
    token_s: float

    def seconds(self, tokens: int) -> float:
        return self.call_s + self.token_s * tokens

    def observe(self, tokens: int, seconds: float) -> None:
        measured = max(0.0, seconds - self.call_s) / max(1, tokens)
        self.token_s += SPEED_SMOOTHING * (measured - self.token_s)


@dataclass
class Calibration:
    """This machine's figures: `text` and `decode` (moved by every timed step), and `frames_per_token`
    (audio frames a phoneme token lasts, to turn a segment's tokens into its length before its text
    side has run) and `tokens_per_char` (phoneme tokens per written character, for sentences not yet
    phonemized)."""

    signature: str
    text: TextSpeed
    decode: DecodeSpeed
    frames_per_token: float
    tokens_per_char: float = 1.0
    measured_s: float = 0.0

    def frames(self, tokens: int) -> int:
        """A segment's frames before its text side has run: its tokens' typical length."""
        return max(1, round(tokens * self.frames_per_token))

    def summary(self) -> dict[str, object]:
        """For `/ping`'s `load`, `emulator status` and the log: ms figures, rounded."""
        decode = self.decode
        return {
            "signature": self.signature,
            "text_call_ms": round(self.text.call_s * 1e3, 2),
            "text_token_ms": round(self.text.token_s * 1e3, 3),
            "decode_call_ms": round(decode.call_s * 1e3, 2),
            "decode_frame_ms": round(decode.frame_s * 1e3, 3),
            "decode_lane_frame_ms": round(decode.lane_frame_s * 1e3, 3),
            "frames_per_token": round(self.frames_per_token, 2),
            "measured_s": round(self.measured_s, 3),
        } | ({"decode_batch_frame_ms": round(decode.batch_frame_s * 1e3, 4)} if decode.batch_frame_s else {})

    def to_json(self) -> dict[str, object]:
        return {
            "signature": self.signature,
            "text": asdict(self.text),
            "decode": {
                "call_s": self.decode.call_s,
                "frame_s": self.decode.frame_s,
                "lane_frame_s": self.decode.lane_frame_s,
            }
            | ({"batch_frame_s": self.decode.batch_frame_s} if self.decode.batch_frame_s else {}),
            "frames_per_token": self.frames_per_token,
            "tokens_per_char": self.tokens_per_char,
            "measured_s": self.measured_s,
        }

    @classmethod
    def from_json(cls, data: object) -> Calibration:
        """The figures a cache file holds; CacheError unless every one is a finite, non-negative number
        where a number belongs (a figure stored as a string, or NaN, would first fail in the arithmetic
        of a request: the replica must recalibrate instead)."""
        if not isinstance(data, dict) or not isinstance(data.get("signature"), str):
            raise CacheError("not a calibration record")
        text, decode = data.get("text"), data.get("decode")
        if not isinstance(text, dict) or not isinstance(decode, dict):
            raise CacheError("no text and decode figures")
        return cls(
            data["signature"],
            TextSpeed(_figure(text, "call_s"), _figure(text, "token_s")),
            DecodeSpeed(
                _figure(decode, "call_s"),
                _figure(decode, "frame_s"),
                _figure(decode, "lane_frame_s"),
                _figure(decode, "batch_frame_s", default=0.0),
            ),
            _figure(data, "frames_per_token"),
            _figure(data, "tokens_per_char"),
            _figure(data, "measured_s", default=0.0),
        )


class CacheError(ValueError):
    """A calibration file that holds no usable figures (the replica calibrates again)."""


def _figure(record: dict, name: str, default: float | None = None) -> float:
    value = record.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise CacheError(f"{name} is {str(value)[:40]!r}, not a finite non-negative number")
    return float(value)


def cpu_signature(engine: SpeechEngine, threads: int) -> str:
    """The CPU model, the vector extensions that pick the int8 kernels, the threads, the CPU quota
    (`cpu_quota.py`) and the engine: figures measured under one signature hold for every replica with
    the same."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    extensions = "+".join(flag for flag in SIGNATURE_FLAGS if flag in flags) or "none"
    graph = getattr(engine, "int8_conv", "")
    quota = quota_cores()
    share = f"|quota{quota:.2f}" if quota is not None else ""
    batch = f"|batch{engine.batch}" if engine.batch > 1 else ""
    return (
        f"{model}|{extensions}|{threads}t{share}|{engine.name}:{engine.device}:{graph}|lanes{engine.lanes}"
        f"{batch}"
    )


def cache_path(cache_dir: Path, signature: str) -> Path:
    digest = hashlib.sha256(signature.encode()).hexdigest()[:16]
    return cache_dir / "calibration" / f"{digest}.json"


def load_cached(cache_dir: Path, signature: str) -> Calibration | None:
    path = cache_path(cache_dir, signature)
    try:
        calibration = Calibration.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:  # CacheError, torn JSON, nesting too deep
        log.warning("calibration cache %s is not usable (%s); timing the engine again", path, exc)
        return None
    return calibration if calibration.signature == signature else None


def save(cache_dir: Path, calibration: Calibration) -> Path:
    """Write atomically (a replica's periodic save and another's read never see half a file)."""
    path = cache_path(cache_dir, calibration.signature)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(calibration.to_json(), indent=1))
    partial.replace(path)
    return path


def calibrate(engine: SpeechEngine, voice: str, threads: int) -> Calibration:
    """Time the text side on a short and a long segment and the decoder (`DecodeSpeed.measure`) on the
    long one's features, the fastest of two runs of each (one run read twice the decoder's figure in one
    replica of three on a quiet 2-core machine; the live figures refine them); on an engine that
    batches, also one pass over up to GPU_BATCH_WINDOWS (on a CPU, CPU_BATCH_WINDOWS) windows."""
    started = time.perf_counter()
    short_tokens = engine.segments(SHORT_TEXT, "en-us")[0]
    long_tokens = engine.segments(SPEED_TEXT, "en-us")[0]

    def timed(tokens: list[int]) -> tuple[float, Features]:
        times = []
        for _ in range(2):
            began = time.perf_counter()
            features = engine.features(tokens, voice, 1.0)
            times.append(time.perf_counter() - began)
        return min(times), features

    short_s, _ = timed(short_tokens)
    long_s, features = timed(long_tokens)
    token_s = max(1e-5, (long_s - short_s) / max(1, len(long_tokens) - len(short_tokens)))
    text = TextSpeed(max(0.0, short_s - token_s * len(short_tokens)), token_s)
    decode = DecodeSpeed.measure(
        lambda ranges: engine.decode_windows(features, ranges),
        features.frames,
        engine.lanes,
        batch=lambda ranges: engine.decode_batch([Window(features, start, stop) for start, stop in ranges]),
        batch_windows=min(
            engine.batch, GPU_BATCH_WINDOWS if engine.device.startswith("cuda") else CPU_BATCH_WINDOWS
        ),
    )
    return Calibration(
        cpu_signature(engine, threads),
        text,
        decode,
        features.frames / len(long_tokens),
        len(long_tokens) / len(SPEED_TEXT),
        time.perf_counter() - started,
    )
