import dataclasses
import json

import pytest

from tts.wire.protocol import (
    Cancel,
    Catalog,
    Close,
    ProtocolError,
    Synthesize,
    check_media_type,
    parse_invocation,
    parse_message,
)

CATALOG = Catalog(
    voices=frozenset({"af_heart", "bm_george"}),
    languages=frozenset({"en-us", "en-gb", "fr-fr"}),
    default_voice="af_heart",
    default_lang="en-us",
    max_text_chars=50,
)


def test_minimal_message_gets_defaults_and_a_request_id():
    message = parse_message('{"text": "Hello."}', CATALOG)
    assert isinstance(message, Synthesize)
    assert (message.text, message.voice, message.speed, message.format, message.lang) == (
        "Hello.",
        "af_heart",
        1.0,
        "pcm",
        "en-us",
    )
    assert message.request_id


def test_text_and_binary_frames_parse_the_same():
    body = {
        "text": "Hi.",
        "voice": "bm_george",
        "speed": 1.25,
        "format": "mp3",
        "lang": "fr-fr",
        "request_id": "r1",
    }
    as_text = parse_message(json.dumps(body), CATALOG)
    as_bytes = parse_message(json.dumps(body).encode(), CATALOG)
    assert as_text == as_bytes
    assert dataclasses.replace(as_text, script=None) == Synthesize(
        "Hi.", "bm_george", 1.25, "mp3", "fr-fr", "r1"
    )


def test_cancel_and_close():
    assert parse_message('{"type": "cancel", "request_id": "r1"}', CATALOG) == Cancel("r1")
    assert parse_message(b'{"type": "cancel"}', CATALOG) == Cancel(None)
    assert parse_message('{"type": "close"}', CATALOG) == Close()


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xff\xfe{", "invalid_utf8"),
        ("{not json", "invalid_json"),
        ("[1, 2]", "not_an_object"),
        ('"text"', "not_an_object"),
        ('{"type": "dance"}', "unknown_type"),
        ('{"voice": "af_heart"}', "missing_text"),
        ('{"text": null}', "missing_text"),
        ('{"text": "   "}', "empty_text"),
        ('{"text": 42}', "invalid_field"),
        (json.dumps({"text": "x" * 51}), "text_too_long"),
        ('{"text": "Hi.", "voice": "af_nobody"}', "unknown_voice"),
        ('{"text": "Hi.", "voice": 3}', "invalid_field"),
        ('{"text": "Hi.", "speed": 0.1}', "invalid_speed"),
        ('{"text": "Hi.", "speed": 9}', "invalid_speed"),
        ('{"text": "Hi.", "speed": "fast"}', "invalid_speed"),
        ('{"text": "Hi.", "speed": true}', "invalid_speed"),
        ('{"text": "Hi.", "format": "vorbis"}', "unknown_format"),
        ('{"text": "Hi.", "lang": "xx-yy"}', "unknown_language"),
        ('{"text": "Hi.", "request_id": "\\ud800"}', "invalid_unicode"),
        ('{"text": "", "request_id": "\\ud800"}', "invalid_unicode"),
        ('{"text": "Hi \\udfff there."}', "invalid_unicode"),
        ('{"type": "cancel", "request_id": "\\ud800"}', "invalid_unicode"),
        (json.dumps({"text": "Hi.", "request_id": "r" * 300}), "invalid_field"),
        ('{"text": "\\u0000"}', "nothing_to_speak"),
        ('{"text": "\\u0000\\u0007\\u200b\\ufeff"}', "nothing_to_speak"),
        ('{"text": "Hi.", "speed": ' + "9" * 5000 + "}", "invalid_json"),
        ('{"text": "Hi.", "speed": NaN}', "invalid_json"),
        ('{"text": "Hi.", "speed": -Infinity}', "invalid_json"),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "invalid_json"),
        ('{"text": "Hi.", "transport": "carrier-pigeon"}', "invalid_transport"),
        ('{"text": "Hi.", "transport": "sse"}', "invalid_transport"),
    ],
)
def test_bad_input_is_a_typed_error(raw, code):
    with pytest.raises(ProtocolError) as caught:
        parse_message(raw, CATALOG)
    error = caught.value
    assert error.code == code
    assert error.to_json()["type"] == "error"
    assert error.message and "KeyError" not in error.message


def test_error_replies_never_carry_a_client_value_that_cannot_be_encoded():
    """A reply quotes what the client sent: it must be short and encodable as UTF-8 whatever came in."""
    for raw in ['{"type": "\\ud800' + "x" * 10_000 + '"}', '{"text": "Hi.", "voice": "\\udc00"}']:
        with pytest.raises(ProtocolError) as caught:
            parse_message(raw, CATALOG)
        reply = json.dumps(caught.value.to_json(), ensure_ascii=False)
        reply.encode("utf-8")
        assert len(reply) < 300


def test_control_characters_read_as_spaces():
    """espeak-ng stops at a NUL: "Hi\\u0000there." would lose "there"."""
    message = parse_message('{"text": "Hi\\u0000there."}', CATALOG)
    assert isinstance(message, Synthesize) and message.text == "Hi there."


def test_websocket_accepts_the_binary_transport_it_uses():
    assert isinstance(parse_message('{"text": "Hi.", "transport": "binary"}', CATALOG), Synthesize)


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/octet-stream",
        "text/plain",
    ],
)
def test_accepted_media_types(content_type):
    check_media_type(content_type)


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "audio/wav", "text/csv", ""],
)
def test_other_media_types_are_unsupported(content_type):
    with pytest.raises(ProtocolError) as caught:
        check_media_type(content_type)
    assert caught.value.code == "unsupported_media_type"


def test_errors_carry_the_request_id_when_one_was_given():
    with pytest.raises(ProtocolError) as caught:
        parse_message('{"text": "", "request_id": "r9"}', CATALOG)
    assert caught.value.to_json() == {
        "type": "error",
        "code": "empty_text",
        "message": "'text' is empty",
        "request_id": "r9",
    }


def test_invocation_transport():
    request, transport = parse_invocation(b'{"text": "Hi.", "transport": "sse"}', CATALOG)
    assert transport == "sse" and request.text == "Hi."
    assert parse_invocation(b'{"text": "Hi."}', CATALOG)[1] == "binary"
    with pytest.raises(ProtocolError) as caught:
        parse_invocation(b'{"text": "Hi.", "transport": "carrier-pigeon"}', CATALOG)
    assert caught.value.code == "invalid_transport"


def test_a_blend_is_a_voice_on_our_messages_too():
    message = parse_message('{"text": "Hi.", "voice": "af_heart(3)+bm_george(1)"}', CATALOG)
    assert isinstance(message, Synthesize)
    assert message.voice == "af_heart(0.75)+bm_george(0.25)"
    with pytest.raises(ProtocolError) as caught:
        parse_message('{"text": "Hi.", "voice": "af_heart+af_nobody"}', CATALOG)
    assert caught.value.code == "unknown_voice"
