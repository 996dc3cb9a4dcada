"""The speech-to-text container's wire vocabulary: what a client sends (audio, as a whole clip or as
PCM frames, and JSON control messages) parsed into typed values with typed errors, and every message
the container sends back, built here. No I/O.

Audio is 16 kHz mono s16le PCM (`facts.STT_SAMPLE_RATE`): raw, or in a WAV file (`audio/wav`) on
`POST /invocations`. Other rates, channel counts and sample formats are refused by name
(`unsupported_sample_rate`, ...), never resampled silently.
"""

from __future__ import annotations

import io
import json
import wave
from dataclasses import dataclass

import numpy as np

from container_kit.errors import RequestError
from container_kit.messages import message_text, shown
from facts import CHANNELS, SAMPLE_BYTES, STT_SAMPLE_RATE

PCM_MEDIA_TYPES = ("audio/pcm", "audio/l16", "application/octet-stream")
WAV_MEDIA_TYPES = ("audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave")


class ProtocolError(RequestError):
    """Input the container cannot act on: the kit's typed error, raised by this wire's rules."""


@dataclass(frozen=True)
class Start:
    """Optional first message of a stream: says what the audio is, so a wrong rate is refused up front."""

    sample_rate: int


@dataclass(frozen=True)
class End:
    """No more audio: the open utterance is finished and the stream ends."""


Control = Start | End


def _check_rate(rate: object) -> int:
    if isinstance(rate, bool) or not isinstance(rate, int):
        raise ProtocolError("invalid_field", "'sample_rate' must be an integer")
    if rate != STT_SAMPLE_RATE:
        raise ProtocolError(
            "unsupported_sample_rate",
            f"audio must be {STT_SAMPLE_RATE} Hz mono s16le PCM, got {shown(rate)} Hz",
        )
    return rate


def parse_control(raw: str | bytes) -> Control:
    """One JSON control message (a TEXT frame, or a BINARY one that looks like JSON) -> typed, or
    ProtocolError."""
    text = message_text(raw, ProtocolError)
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError):
        raise ProtocolError("invalid_json", "control message is not JSON") from None
    if not isinstance(obj, dict):
        raise ProtocolError("not_an_object", f"message must be a JSON object, got {type(obj).__name__}")
    kind = obj.get("type")
    if kind == "end":
        return End()
    if kind == "start":
        fmt = obj.get("format", "pcm_s16le")
        if fmt != "pcm_s16le":
            raise ProtocolError(
                "unsupported_sample_format", f"unknown format {shown(fmt)}; send pcm_s16le (16-bit PCM)"
            )
        if obj.get("channels", CHANNELS) != CHANNELS:
            raise ProtocolError("unsupported_channels", f"audio must be mono, got {shown(obj['channels'])}")
        return Start(_check_rate(obj.get("sample_rate", STT_SAMPLE_RATE)))
    raise ProtocolError("unknown_type", f"unknown message type {shown(kind)}; expected start or end")


def looks_like_control(frame: bytes) -> bool:
    """SageMaker delivers a part as a BINARY frame unless its client marks it UTF8, so a JSON control
    message may come as bytes: a frame that is a JSON object with a `type` is read as one. PCM that
    happens to be such a text (it would open with `{"`, samples of 0x227b) is not speech anyway."""
    if not (frame.startswith(b'{"') and frame.rstrip().endswith(b"}")):
        return False
    try:
        obj = json.loads(frame)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "type" in obj


def pcm_samples(pcm: bytes) -> np.ndarray:
    """s16le bytes -> float32 samples in [-1, 1)."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def _media_type(content_type: str | None) -> tuple[str, dict[str, str]]:
    if not content_type:
        return "application/octet-stream", {}
    media_type, *params = (p.strip() for p in content_type.split(";"))
    parameters = {}
    for param in params:
        key, _, value = param.partition("=")
        parameters[key.strip().lower()] = value.strip().strip('"')
    return media_type.lower(), parameters


def _wav_pcm(body: bytes) -> bytes:
    try:
        with wave.open(io.BytesIO(body)) as wav:
            rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
            frames = wav.readframes(wav.getnframes())
    except Exception as exc:  # the wave module's own errors, and what its chunk reader raises on a
        # header that lies: a fmt chunk claiming 4 GB made Chunk.skip raise RuntimeError, a 500 with a
        # plain-text traceback instead of this typed 400.
        raise ProtocolError(
            "invalid_wav", f"the body is not a PCM WAV file: {exc or type(exc).__name__}"
        ) from None
    if width != SAMPLE_BYTES:
        raise ProtocolError(
            "unsupported_sample_format", f"WAV samples must be 16-bit PCM, got {8 * width}-bit"
        )
    if channels != CHANNELS:
        raise ProtocolError("unsupported_channels", f"WAV must be mono, got {channels} channels")
    _check_rate(rate)
    return frames


def parse_clip(body: bytes, content_type: str | None, max_seconds: int) -> np.ndarray:
    """A `POST /invocations` body -> 16 kHz float32 samples, or ProtocolError."""
    media_type, parameters = _media_type(content_type)
    if media_type in WAV_MEDIA_TYPES:
        pcm = _wav_pcm(body)
    elif media_type in PCM_MEDIA_TYPES:
        if "rate" in parameters:
            rate = parameters["rate"]
            _check_rate(int(rate) if rate.isdigit() else rate)
        if parameters.get("channels", str(CHANNELS)) != str(CHANNELS):
            raise ProtocolError("unsupported_channels", f"audio must be mono, got {parameters['channels']}")
        pcm = _wav_pcm(body) if body.startswith(b"RIFF") else body
    else:
        raise ProtocolError(
            "unsupported_media_type",
            f"Content-Type {shown(media_type)} is not accepted; send audio/wav or audio/pcm "
            f"({STT_SAMPLE_RATE} Hz mono s16le)",
        )
    if len(pcm) % SAMPLE_BYTES:
        raise ProtocolError("invalid_pcm", f"s16le PCM has an even number of bytes, got {len(pcm)}")
    if not pcm:
        raise ProtocolError("empty_audio", "the clip has no audio")
    seconds = len(pcm) / (STT_SAMPLE_RATE * SAMPLE_BYTES)
    if seconds > max_seconds:
        raise ProtocolError("audio_too_long", f"the clip is {seconds:.1f} s; the limit is {max_seconds} s")
    return pcm_samples(pcm)


# Outbound messages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    text: str
    start_ms: int
    end_ms: int


def words_json(words: list[Word]) -> list[dict[str, object]]:
    return [{"text": w.text, "start_ms": w.start_ms, "end_ms": w.end_ms} for w in words]


def transcript(text: str, words: list[Word], duration_ms: int) -> dict[str, object]:
    """The `POST /invocations` answer."""
    return {"text": text, "words": words_json(words), "duration_ms": duration_ms}


def speech_started(utterance: int, start_ms: int) -> dict[str, object]:
    """The VAD heard speech begin: a client uses it to barge in before any text exists."""
    return {"type": "speech_started", "utterance": utterance, "start_ms": start_ms}


def pause(
    utterance: int, text: str, complete: float | None, reads_finished: bool, ends: bool
) -> dict[str, object]:
    """The user paused (`STT_TURN_CHECK_MS` of silence): `text` is the utterance's transcript if it ends
    in this pause, `complete` the turn model's probability that it sounds finished (None with the turn
    model off), `reads_finished` whether the words could be a whole turn (not ending on "the", "to",
    "um" ...), `ends` whether the turn ends here (its final follows at once). A client may start on
    `text` before the turn is certain (`speech_resumed` says it was not the end)."""
    shown = None if complete is None else round(complete, 3)
    return {
        "type": "pause",
        "utterance": utterance,
        "text": text,
        "complete": shown,
        "reads_finished": reads_finished,
        "ends": ends,
    }


def speech_resumed(utterance: int) -> dict[str, object]:
    """Speech came back after a `pause` that did not end the turn: the utterance goes on."""
    return {"type": "speech_resumed", "utterance": utterance}


def partial(utterance: int, text: str) -> dict[str, object]:
    return {"type": "partial", "utterance": utterance, "text": text}


def final(utterance: int, text: str, words: list[Word], start_ms: int, end_ms: int) -> dict[str, object]:
    """One utterance's transcript; word times are ms from the start of the stream's audio."""
    return {
        "type": "final",
        "utterance": utterance,
        "text": text,
        "words": words_json(words),
        "start_ms": start_ms,
        "end_ms": end_ms,
    }


def done(utterances: int, audio_ms: int) -> dict[str, object]:
    """The answer to `end`: every final is out; the container closes the stream after it."""
    return {"type": "done", "utterances": utterances, "audio_ms": audio_ms}
