"""Hypothesis fuzzing of the agent's control-frame rule (`agent.endpoint_stream.classify`): a chunk is a
control frame only if the whole chunk is a JSON object, and no chunk, however hostile, makes it raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.endpoint_stream import Audio, Control, classify

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(120)]

FUZZ = settings(max_examples=200, deadline=None)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),  # lone surrogates and NULs included
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
objects = st.dictionaries(st.text(), json_values, max_size=6)


@FUZZ
@given(st.binary(max_size=4096))
def test_any_bytes_are_audio_or_a_control_frame(chunk: bytes) -> None:
    result = classify(chunk)
    assert isinstance(result, Audio | Control)
    if isinstance(result, Audio):
        assert result.data == chunk


@FUZZ
@given(objects, st.sampled_from(["", " ", "\n", "\t "]))
def test_a_whole_json_object_is_a_control_frame(message: dict, pad: str) -> None:
    chunk = (pad + json.dumps(message) + pad).encode("utf-8", "surrogatepass")
    result = classify(chunk)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(message, ensure_ascii=False)):
        assert isinstance(result, Audio | Control)  # raw surrogates are not UTF-8: either is allowed
    else:
        assert result == Control(message)


@FUZZ
@given(objects.filter(bool), st.integers(min_value=1, max_value=50))
def test_a_cut_json_object_is_audio(message: dict, cut: int) -> None:
    chunk = json.dumps(message).encode()
    assert isinstance(classify(chunk[: max(1, len(chunk) - cut)]), Audio)


@FUZZ
@given(json_values.filter(lambda v: not isinstance(v, dict)))
def test_json_that_is_not_an_object_is_audio(value) -> None:
    assert isinstance(classify(json.dumps(value).encode()), Audio)


@pytest.mark.parametrize(
    ("case", "chunk"),
    [
        ("a 5 000-digit integer", b'{"type": "synthesis_start", "n": ' + b"9" * 5000 + b"}"),
        ("JSON nested 100 000 deep", b"{" + b'"a":{' * 100_000 + b"}" * 100_001),
        ("an array nested 100 000 deep", b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ("a lone surrogate escape", b'{"type": "error", "request_id": "\\ud800"}'),
        ("a NUL in a string", b'{"type": "error", "message": "a\x00b"}'),
        ("PCM that starts with {", b"{\x00\x01\x02" * 100),
    ],
)
def test_adversarial_chunks_never_raise(case: str, chunk: bytes) -> None:
    result = classify(chunk)
    print(f"TRIED classify({case}) -> {type(result).__name__}")
    assert isinstance(result, Audio | Control)
    if case == "a lone surrogate escape":
        assert result == Control({"type": "error", "request_id": "\ud800"})
