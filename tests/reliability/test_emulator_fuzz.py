"""Hypothesis fuzzing of the one event-stream codec (emulator/wire/eventstream.py).

Whatever bytes arrive, split wherever the network splits them, the decoder returns messages or raises
`EventStreamError`, nothing else; and every message it encodes comes back whole, however it is cut.
"""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from emulator.wire import eventstream

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(120)]

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

header_values = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.binary(max_size=64),
    st.text(max_size=64),
    st.datetimes(
        min_value=datetime.datetime(1970, 1, 2),
        max_value=datetime.datetime(2200, 1, 1),
        timezones=st.just(datetime.UTC),
    ).map(lambda d: d.replace(microsecond=(d.microsecond // 1000) * 1000)),
    st.uuids(),
)
headers = st.dictionaries(
    st.text(min_size=1, max_size=20).filter(lambda n: len(n.encode()) < 256), header_values, max_size=6
)
messages = st.builds(eventstream.Message, headers, st.binary(max_size=512))


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _decode_all(pieces: list[bytes]) -> list[eventstream.Message]:
    decoder, out = eventstream.Decoder(), []
    for piece in pieces:
        out += decoder.feed(piece)
    assert decoder.pending == 0
    return out


FAR_MILLISECOND = datetime.datetime(2107, 1, 1, 0, 0, 0, 6000, tzinfo=datetime.UTC)
"""Found by this test: through a float second, its milliseconds were encoded as 5."""


@FUZZ
@given(st.lists(messages, min_size=1, max_size=4), st.lists(st.integers(min_value=0), max_size=12))
@example([eventstream.Message({"0": FAR_MILLISECOND}, b"")], [])
def test_encoded_messages_come_back_whole_however_they_are_cut(batch, points) -> None:
    data = b"".join(eventstream.encode(m.headers, m.payload) for m in batch)
    decoded = _decode_all(_cuts(data, points))
    assert [(m.headers, m.payload) for m in decoded] == [(m.headers, m.payload) for m in batch]


@FUZZ
@given(st.binary(max_size=2048), st.lists(st.integers(min_value=0), max_size=8))
def test_arbitrary_bytes_decode_or_raise_event_stream_error(data, points) -> None:
    decoder = eventstream.Decoder()
    try:
        for piece in _cuts(data, points):
            for message in decoder.feed(piece):
                assert isinstance(message.headers, dict) and isinstance(message.payload, bytes)
    except eventstream.EventStreamError:
        pass


@FUZZ
@given(messages, st.integers(min_value=0), st.integers(min_value=0, max_value=255))
def test_a_flipped_byte_is_caught_by_the_crcs(message, position, flip) -> None:
    data = bytearray(eventstream.encode(message.headers, message.payload))
    position %= len(data)
    data[position] ^= flip or 1
    decoder = eventstream.Decoder()
    try:
        decoded = decoder.feed(bytes(data))
    except eventstream.EventStreamError:
        return
    # A flip in the length fields can only make the decoder wait for more bytes (no message yet).
    assert decoded == [] and decoder.pending == len(data)


@FUZZ
@given(st.binary(min_size=1, max_size=4096))
def test_headers_block_of_random_bytes_is_a_typed_error(raw_headers) -> None:
    import struct
    import zlib

    prelude = struct.pack(">II", 16 + len(raw_headers), len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw_headers
    frame = body + struct.pack(">I", zlib.crc32(body))
    try:
        [message] = eventstream.Decoder().feed(frame)
    except eventstream.EventStreamError:
        return
    assert isinstance(message.headers, dict)
