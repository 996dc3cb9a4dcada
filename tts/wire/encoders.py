"""The one audio-encoder module: 24 kHz mono s16le PCM in, a streamed byte format out, chunk by chunk.

Every path (WebSocket frames, chunked HTTP, SSE) feeds PCM as it is computed and sends whatever bytes
the encoder has produced so far, so no format holds audio back longer than its codec must. Compressed
formats go through PyAV (ffmpeg's libmp3lame, native AAC in ADTS, FLAC, libopus in Ogg with 20 ms pages:
the Ogg muxer's default would hold about a second of pages).
"""

from __future__ import annotations

import struct
from typing import Protocol

import av
import numpy as np

from facts import AUDIO_FORMATS, SAMPLE_RATE

# (container format, codec, bit rate, muxer options)
_AV_SETTINGS = {
    "mp3": ("mp3", "libmp3lame", 64_000, {}),
    "aac": ("adts", "aac", 64_000, {}),
    "opus": ("ogg", "libopus", 32_000, {"page_duration": "20000"}),
    "flac": ("flac", "flac", 0, {}),  # lossless: no bit rate; STREAMINFO's length stays 0 (unseekable)
}


class Encoder(Protocol):
    def encode(self, pcm: bytes) -> bytes:
        """Take s16le PCM; return the encoded bytes that are ready now (may be empty)."""
        ...

    def flush(self) -> bytes:
        """End the stream; return the remaining bytes."""
        ...


class PcmEncoder:
    def encode(self, pcm: bytes) -> bytes:
        return pcm

    def flush(self) -> bytes:
        return b""


def _wav_header(riff_size: int, data_size: int, sample_rate: int) -> bytes:
    """The 44-byte header of 16-bit mono PCM WAV."""
    byte_rate = sample_rate * 2
    return (
        b"RIFF"
        + struct.pack("<I", riff_size)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, byte_rate, 2, 16)
        + b"data"
        + struct.pack("<I", data_size)
    )


def streaming_wav_header(sample_rate: int = SAMPLE_RATE) -> bytes:
    """A WAV header for a stream of unknown length: RIFF and data sizes are 0xFFFFFFFF."""
    return _wav_header(0xFFFFFFFF, 0xFFFFFFFF, sample_rate)


def wav_file(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    """A whole WAV file of s16le mono `pcm`: the header with its real sizes (36 header bytes after the
    RIFF size field, then the samples), so every player knows the length."""
    return _wav_header(36 + len(pcm), len(pcm), sample_rate) + pcm


class WavEncoder:
    def __init__(self) -> None:
        self._header: bytes | None = streaming_wav_header()

    def encode(self, pcm: bytes) -> bytes:
        header, self._header = self._header or b"", None
        return header + pcm

    def flush(self) -> bytes:
        header, self._header = self._header or b"", None
        return header


class _Sink:
    """A write-only, non-seekable file object, so muxers never try to rewrite earlier bytes."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def write(self, data: bytes) -> int:
        self.buffer += data
        return len(data)

    def take(self) -> bytes:
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


class AvEncoder:
    def __init__(self, fmt: str) -> None:
        container_format, codec, bit_rate, options = _AV_SETTINGS[fmt]
        self._sink = _Sink()
        self._container = av.open(self._sink, mode="w", format=container_format, options=options)
        self._stream = self._container.add_stream(codec, rate=SAMPLE_RATE, layout="mono")
        if bit_rate:
            self._stream.bit_rate = bit_rate
        self._samples = 0
        self._closed = False

    def encode(self, pcm: bytes) -> bytes:
        if not pcm:
            return self._sink.take()
        samples = np.frombuffer(pcm, dtype=np.int16).reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = self._samples
        self._samples += samples.shape[1]
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        return self._sink.take()

    def flush(self) -> bytes:
        if not self._closed:
            self._closed = True
            for packet in self._stream.encode(None):
                self._container.mux(packet)
            self._container.close()
        return self._sink.take()


def make_encoder(fmt: str) -> Encoder:
    if fmt == "pcm":
        return PcmEncoder()
    if fmt == "wav":
        return WavEncoder()
    if fmt in _AV_SETTINGS:
        return AvEncoder(fmt)
    raise ValueError(f"unknown audio format {fmt!r}; expected one of {', '.join(AUDIO_FORMATS)}")
