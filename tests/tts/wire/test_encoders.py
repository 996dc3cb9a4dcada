import io
import struct

import av
import numpy as np
import pytest

from facts import AUDIO_FORMATS, MEDIA_TYPES
from tts.wire.audio import float_to_pcm16
from tts.wire.encoders import make_encoder, streaming_wav_header

RATE = 24_000


def tone(seconds: float) -> bytes:
    t = np.arange(int(RATE * seconds)) / RATE
    return float_to_pcm16(0.3 * np.sin(2 * np.pi * 440 * t))


def encode_in_frames(fmt: str, pcm: bytes, frame: int = 4800) -> list[bytes]:
    encoder = make_encoder(fmt)
    chunks = [encoder.encode(pcm[i : i + frame]) for i in range(0, len(pcm), frame)]
    return [*chunks, encoder.flush()]


def decoded_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        return sum(frame.samples for frame in container.decode(stream)) / stream.sample_rate


@pytest.mark.parametrize("fmt", ["wav", "mp3", "aac", "opus", "flac"])
def test_each_format_decodes_to_the_input_duration(fmt):
    data = b"".join(encode_in_frames(fmt, tone(2.0)))
    assert decoded_seconds(data) == pytest.approx(2.0, abs=0.08)


@pytest.mark.parametrize("fmt", ["mp3", "aac", "opus"])
def test_compressed_formats_stream_before_the_end(fmt):
    """Bytes must come out while audio is still going in, not only at flush."""
    chunks = encode_in_frames(fmt, tone(1.0))
    produced_early = sum(len(c) for c in chunks[:5])
    assert produced_early > 0, f"{fmt} held back the first 0.5 s of audio"
    assert len(b"".join(chunks)) < len(tone(1.0)) / 4, "compressed output should be much smaller than PCM"


def test_pcm_is_passed_through_and_wav_prepends_a_streaming_header():
    pcm = tone(0.1)
    assert b"".join(encode_in_frames("pcm", pcm)) == pcm
    wav = b"".join(encode_in_frames("wav", pcm))
    header = streaming_wav_header()
    assert wav == header + pcm
    assert wav[:4] == b"RIFF" and struct.unpack("<I", wav[40:44])[0] == 0xFFFFFFFF
    assert struct.unpack("<I", wav[24:28])[0] == RATE


def test_every_format_has_an_encoder_and_a_media_type_and_unknown_ones_are_rejected():
    assert set(MEDIA_TYPES) == set(AUDIO_FORMATS)
    for fmt in AUDIO_FORMATS:
        encoder = make_encoder(fmt)
        assert encoder.encode(b"\0\0" * 2400) + encoder.flush(), fmt
    with pytest.raises(ValueError, match="unknown audio format"):
        make_encoder("vorbis")


def test_float_to_pcm16_clips():
    pcm = np.frombuffer(float_to_pcm16(np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0])), dtype="<i2")
    assert pcm.tolist() == [-32767, -32767, 0, 16383, 32767, 32767]


def test_flac_is_lossless_and_streams_before_the_end():
    pcm = tone(1.0)
    chunks = encode_in_frames("flac", pcm)
    assert sum(len(c) for c in chunks[:3]) > 0, "flac held back the first 0.6 s of audio"
    with av.open(io.BytesIO(b"".join(chunks))) as container:
        decoded = b"".join(
            bytes(frame.to_ndarray().astype("<i2").tobytes()) for frame in container.decode(audio=0)
        )
    assert decoded == pcm
