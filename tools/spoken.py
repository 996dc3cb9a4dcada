"""Spoken questions for the turn-taking study and tests, as 16 kHz mono s16le (what a microphone sends
the agent's `/ws`): said by Kokoro (this project's voice, decoded in this process) or by espeak-ng
(another library: the `espeak-ng` program), with a thinking pause put inside at a word boundary, or a
cough-like burst of noise.

A pause is put into the whole sentence's rendering, not between two renderings of its halves: a half
said alone ends as a sentence does (falling pitch, a lengthened last sound), which a turn model rightly
hears as finished, while a person who stops to think mid-sentence does not sound finished.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

import numpy as np

from facts import SAMPLE_RATE, STT_SAMPLE_RATE

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


def espeak(text: str, voice: str = ESPEAK_VOICES[0], ssml: bool = False) -> bytes:
    """`text` (SSML with `ssml`) said by espeak-ng (`voice`, 165 words a minute), as 16 kHz s16le."""
    import io
    import wave

    wav = subprocess.run(
        ["espeak-ng", *(["-m"] if ssml else []), "-v", voice, "-s", "165", "--stdout", text],
        capture_output=True,
        check=True,
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


def with_pause(text: str, after_words: int, pause_s: float, voice: str) -> bytes:
    """`text` said in `voice` with `pause_s` of silence after its first `after_words` written words: in
    Kokoro's rendering, cut midway between the last of them and the next (the duration predictor's own
    timing, as the container's `words` frames give it: cut at the next word's start, the onset of
    "boil" was heard as "to buy"; at the word's end, "a" was lost); espeak-ng stops there itself (SSML
    `<break>`)."""
    written = text.split()
    if not 0 < after_words < len(written):
        raise ValueError(f"cannot pause after word {after_words} of {len(written)}")
    if voice not in KOKORO_VOICES:
        before, after = " ".join(written[:after_words]), " ".join(written[after_words:])
        pause = f'<break time="{round(pause_s * 1000)}ms"/>'
        return espeak(f"<speak>{before} {pause} {after}</speak>", voice, ssml=True)
    from tts.text.script import Script

    engine = _kokoro()
    audio: list[np.ndarray] = []
    timed: list[tuple[float, float]] = []  # each written word's first and last sound, in ms
    for segment in engine.speech_segments(Script.plain(text), "en-us", timed=True):
        features = engine.features(list(segment.tokens), voice, 1.0)
        words = segment.words.times(features.durations, sum(map(len, audio))).words
        timed += [(w.start_ms, w.end_ms) for w in words]
        audio.append(engine.decode(features))
    cut = None
    if len(timed) > after_words:  # midway between the two words: all of the one, none of the next
        cut = round((timed[after_words - 1][1] + timed[after_words][0]) / 2 * SAMPLE_RATE / 1000)
    if cut is None:
        raise ValueError(f"Kokoro's timings of {text!r} have no word {after_words + 1}")
    samples = np.concatenate(audio)
    pause = np.zeros(round(pause_s * SAMPLE_RATE), np.float32)
    return _pcm(_resampled(np.concatenate([samples[:cut], pause, samples[cut:]]), SAMPLE_RATE))


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
