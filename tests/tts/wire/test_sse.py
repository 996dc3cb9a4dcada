import itertools

from hypothesis import given
from hypothesis import strategies as st

from tts.wire.sse import SSEError, SSEParser, encode_event

EVENTS = [{"type": "audio_chunk", "seq": i, "data": "QUJD" * i} for i in range(5)] + [
    {"type": "end", "ü": "ß"}
]
STREAM = b"".join(encode_event(e) for e in EVENTS)


def test_round_trip():
    assert SSEParser().feed(STREAM) == EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_yields_the_same_events(cuts):
    parser = SSEParser()
    bounds = [0, *sorted(cuts), len(STREAM)]
    events = []
    for start, end in itertools.pairwise(bounds):
        events += parser.feed(STREAM[start:end])
    assert events == EVENTS
    assert parser.pending == b""


def test_a_frame_split_mid_way_is_held_until_complete():
    parser = SSEParser()
    frame = encode_event({"type": "x"})
    assert parser.feed(frame[:7]) == []
    assert parser.feed(frame[7:]) == [{"type": "x"}]


def test_crlf_comments_and_multiline_data():
    parser = SSEParser()
    assert parser.feed(b': keep-alive\r\n\r\ndata: {"type":\r') == []
    assert parser.feed(b'\ndata: "y"}\r\n\r\n') == [{"type": "y"}]


def test_non_json_data_is_a_typed_error():
    parser = SSEParser()
    try:
        parser.feed(b"data: nope\n\n")
    except SSEError as error:
        assert "not JSON" in str(error)
    else:
        raise AssertionError("expected SSEError")
