"""Spoken questions for the turn-taking study and tests, as 16 kHz mono s16le (what a microphone sends
the agent's `/ws`): said by Kokoro (this project's voice, decoded in this process) or by espeak-ng
(another library: the `espeak-ng` program), with a thinking pause put inside at a word boundary, or a
cough-like burst of noise.

A pause is put into the whole sentence's rendering, not between two renderings of its halves: a half
said alone ends as a sentence does (falling pitch, a lengthened last sound), which a turn model rightly
hears as finished, while a person who stops to think mid-sentence does not sound finished. The
boundary is where Whisper places the gap between the two words (tools/asr.py), cut at the quietest
10 ms around it.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

import numpy as np

from facts import SAMPLE_RATE, STT_SAMPLE_RATE
from tools.asr import word_timings

KOKORO_VOICES = ("jm_kumo", "jf_alpha")
ESPEAK_VOICES = ("en-us", "en-gb+f3")


def _pcm(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def _resampled(samples: np.ndarray, rate: int) -> np.ndarray:
    """`samples` at `rate` to 16 kHz, with PyAV's resampler (what the stack's clients use)."""
    import av

    frame = av.AudioFrame.from_ndarray(
        (np.clip(samples, -1, 1) * 32767).astype("<i2").reshape(1, -1), format="s16", layout="mono"
    )
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="s16", layout="mono", rate=STT_SAMPLE_RATE)
    out = b"".join(
        bytes(part.planes[0])[: part.samples * 2]
        for part in [*resampler.resample(frame), *resampler.resample(None)]
    )
    return np.frombuffer(out, dtype="<i2").astype(np.float32) / 32768.0


@functools.cache
def _kokoro():
    from tts.config import TTSConfig
    from tts.engines import create_engine

    return create_engine(TTSConfig.from_env())


def kokoro(text: str, voice: str = KOKORO_VOICES[0]) -> bytes:
    """`text` in Kokoro's `voice`, each segment decoded whole, as 16 kHz s16le."""
    engine = _kokoro()
    parts = [engine.decode(engine.features(tokens, voice, 1.0)) for tokens in engine.segments(text, "en-us")]
    return _pcm(_resampled(np.concatenate(parts), SAMPLE_RATE))


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def espeak(text: str, voice: str = ESPEAK_VOICES[0]) -> bytes:
    """`text` said by espeak-ng (`voice`, 165 words a minute), as 16 kHz s16le."""
    import io
    import wave

    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", "165", "--stdout", text], capture_output=True, check=True
    ).stdout
    with wave.open(io.BytesIO(wav)) as read:
        rate = read.getframerate()
        samples = np.frombuffer(read.readframes(read.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    return _pcm(_resampled(samples, rate))


def say(text: str, voice: str) -> bytes:
    """`text` in `voice`: one of KOKORO_VOICES or ESPEAK_VOICES."""
    return kokoro(text, voice) if voice in KOKORO_VOICES else espeak(text, voice)


def silence(seconds: float) -> bytes:
    return b"\x00\x00" * round(seconds * STT_SAMPLE_RATE)


def with_pause(pcm: bytes, after_words: int, pause_s: float) -> bytes:
    """`pcm` (16 kHz speech) with `pause_s` of silence after its first `after_words` words."""
    timings = word_timings(pcm, STT_SAMPLE_RATE)
    if not 0 < after_words < len(timings):
        raise ValueError(f"cannot pause after word {after_words} of {len(timings)}: {timings}")
    gap_from, gap_to = timings[after_words - 1][2], timings[after_words][1]
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    block = STT_SAMPLE_RATE // 100  # 10 ms
    first = max(0, round(min(gap_from, gap_to) * STT_SAMPLE_RATE / 1000) - 2 * block)
    last = min(len(samples) - block, round(max(gap_from, gap_to) * STT_SAMPLE_RATE / 1000) + 2 * block)
    starts = range(first, max(first, last) + 1, block // 2)
    cut = min(starts, key=lambda at: float(np.sum(samples[at : at + block] ** 2)))
    cut += block // 2
    return pcm[: 2 * cut] + silence(pause_s) + pcm[2 * cut :]


def cough(seconds: float = 0.35, seed: int = 0) -> bytes:
    """A cough-like burst: noise shaped as a cough's two bursts (a sharp onset, a decaying tail), band
    limited to where a cough's energy is (mostly 300-3,000 Hz), at speech's loudness."""
    rng = np.random.default_rng(seed)
    count = round(seconds * STT_SAMPLE_RATE)
    noise = rng.standard_normal(count + 64)
    kernel = np.hanning(9)  # a gentle low-pass, then a difference for the high-pass
    band = np.diff(np.convolve(noise, kernel / kernel.sum(), mode="same"))[:count]
    t = np.arange(count) / STT_SAMPLE_RATE
    second = t > seconds * 0.45
    envelope = np.exp(-t / 0.06) + 0.6 * second * np.exp(-np.maximum(t - seconds * 0.45, 0) / 0.05)
    burst = band * envelope
    return _pcm(0.3 * burst / np.max(np.abs(burst)))
