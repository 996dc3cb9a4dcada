"""Hypothesis fuzzing of the container's parsers with adversarial JSON: huge integers, deep nesting,
lone surrogates, NULs, NaN, invalid UTF-8, truncation.

The message parser (tts/wire/protocol.py) returns a typed message or raises ProtocolError whose reply can
always be encoded; the SSE parser (tts/wire/sse.py) returns events or raises SSEError. Nothing else. Each
test prints how many inputs ended in which outcome.
"""

import itertools
import json
import unicodedata
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tts.wire import protocol
from tts.wire.protocol import Cancel, Catalog, Close, ProtocolError, Synthesize
from tts.wire.sse import SSEError, SSEParser

pytestmark = pytest.mark.reliability

# voices, languages, default voice, default language, longest text
CATALOG = Catalog(
    frozenset({"jm_kumo", "af_heart"}), frozenset({"en-us", "fr-fr", "ja"}), "af_heart", "en-us", 4000
)
FIELDS = ["type", "text", "voice", "speed", "format", "lang", "request_id", "transport", "lexicon", "extra"]
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
nasty_strings = st.one_of(
    st.text(max_size=20),
    st.lists(
        st.one_of(surrogates, st.sampled_from(["\x00", "\x07", "\u200b", "\ufeff", "-", "é", "Hi."])),
        max_size=6,
    ).map("".join),
    st.sampled_from(["synthesize", "cancel", "close", "jm_kumo", "pcm", "mp3", "en-us", "sse", "binary", ""]),
    # markup: SSML (balanced or not) and inline pronunciations, read by tts/text/markup.py
    st.lists(
        st.sampled_from(
            [
                "<speak>",
                "</speak>",
                "<break time='1s'/>",
                "<phoneme ph='wˈɪn'>",
                "</phoneme>",
                "<sub alias='x'>",
                "</sub>",
                "<p>",
                "&amp;",
                "<!--",
                "[a](/wˈɪn/)",
                "[a](/☃/)",
                "Hi.",
                "<",
                ">",
                "'",
            ]
        ),
        max_size=8,
    ).map("".join),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | nasty_strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3),
    max_leaves=12,
)
# json.dumps writes lone surrogates as \ud800 escapes and non-finite floats as NaN/Infinity, as clients do.
objects = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=7).map(json.dumps)
literals = st.one_of(
    st.integers(4000, 6000).map(lambda n: "9" * n),  # over Python's 4300-digit int limit (or just under)
    st.integers(500, 120_000).map(lambda n: "[" * n + "]" * n),  # nesting past the recursion limit
    st.sampled_from(
        ['"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', "NaN", "-Infinity", "1e999", "-0", '"\\"']
    ),
)
templated = st.tuples(st.sampled_from(FIELDS), literals).map(
    lambda kv: f'{{"text": "Hi.", "{kv[0]}": {kv[1]}}}'
)
# a valid message with one field replaced by anything
one_field_off = st.tuples(st.sampled_from(FIELDS), json_values).map(
    lambda kv: json.dumps({"text": "Hello there.", kv[0]: kv[1]})
)
truncated = st.tuples(objects, st.integers(0, 200)).map(lambda pair: pair[0][: pair[1]])
as_bytes = st.tuples(st.one_of(objects, templated), st.booleans()).map(
    lambda pair: pair[0].encode("utf-8", "surrogatepass") if pair[1] else pair[0]
)
messages = st.one_of(
    objects, one_field_off, templated, truncated, as_bytes, st.binary(max_size=64), st.text(max_size=64)
)


def check_parse(parse, raw, outcomes: Counter) -> None:
    try:
        result = parse(raw, CATALOG)
    except ProtocolError as error:
        reply = json.dumps(error.to_json(), ensure_ascii=False).encode("utf-8")  # never unencodable
        assert len(reply) < 1000 and error.message
        outcomes[error.code] += 1
        return
    message = result[0] if isinstance(result, tuple) else result
    assert isinstance(message, Synthesize | Cancel | Close)
    if isinstance(message, Synthesize):
        message.text.encode("utf-8")
        message.request_id.encode("utf-8")
        assert not any(unicodedata.category(ch) == "Cc" for ch in message.text)
    outcomes[type(message).__name__] += 1


def test_message_parser_returns_a_message_or_a_protocol_error():
    outcomes: Counter = Counter()

    @FUZZ
    @given(messages)
    @example('{"text": "Hi.", "request_id": "\\ud800"}')
    @example('{"text": "", "request_id": "\\ud800"}')
    @example('{"text": "Hi.", "speed": ' + "9" * 4301 + "}")
    @example('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    @example('{"text": "\\u0000"}')
    def check(raw):
        check_parse(protocol.parse_message, raw, outcomes)

    check()
    print(f"\nparse_message over {outcomes.total()} adversarial inputs: {dict(outcomes.most_common())}")
    assert outcomes["invalid_json"] and outcomes["invalid_unicode"] and outcomes["nothing_to_speak"]


def test_invocation_parser_returns_a_request_or_a_protocol_error():
    outcomes: Counter = Counter()

    @FUZZ
    @given(
        st.one_of(
            messages.map(lambda raw: raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"))
        )
    )
    def check(body):
        check_parse(protocol.parse_invocation, body, outcomes)

    check()
    print(f"\nparse_invocation over {outcomes.total()} adversarial bodies: {dict(outcomes.most_common())}")
    assert outcomes["invalid_json"] and outcomes["Synthesize"]


def test_media_type_check_accepts_or_refuses_with_a_typed_error():
    outcomes: Counter = Counter()

    @FUZZ
    @given(
        st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["application/json", "TEXT/PLAIN; x=1"]))
    )
    def check(content_type):
        try:
            protocol.check_media_type(content_type)
        except ProtocolError as error:
            assert error.code == "unsupported_media_type"
            json.dumps(error.to_json(), ensure_ascii=False).encode("utf-8")
            outcomes["refused"] += 1
        else:
            outcomes["accepted"] += 1

    check()
    print(f"\ncheck_media_type: {dict(outcomes)}")
    assert outcomes["accepted"] and outcomes["refused"]


sse_payloads = st.one_of(objects, templated, truncated, st.text(max_size=30)).map(
    lambda text: text.encode("utf-8", "surrogatepass")
)
sse_frames = st.one_of(
    sse_payloads.map(lambda data: b"data: " + data + b"\n\n"),
    sse_payloads.map(lambda data: b"data:" + data.replace(b"\n", b"\r\n") + b"\r\n\r\n"),
    st.binary(max_size=40),
    st.just(b": keep-alive\n\n"),
)


def test_sse_parser_returns_events_or_an_sse_error():
    outcomes: Counter = Counter()

    @FUZZ
    @given(st.lists(sse_frames, max_size=5), st.lists(st.integers(0, 4000), max_size=6))
    def check(frames, cuts):
        stream = b"".join(frames)
        bounds = [0, *sorted(c for c in cuts if c < len(stream)), len(stream)]
        parser = SSEParser()
        for start, end in itertools.pairwise(bounds):
            try:
                events = parser.feed(stream[start:end])
            except SSEError:
                outcomes["SSEError"] += 1
                continue
            assert all(isinstance(event, dict) for event in events)
            outcomes["events"] += len(events)

    check()
    print(f"\nSSEParser: {dict(outcomes)}")
    assert outcomes["SSEError"] and outcomes["events"]
