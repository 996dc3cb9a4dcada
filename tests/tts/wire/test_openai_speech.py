"""OpenAI's speech body read into our request: defaults, the speed clamp, blends, and errors in OpenAI's
envelope naming the field."""

import pytest

from tts.wire.openai_speech import error_body, is_speech_body, parse_speech
from tts.wire.protocol import Catalog, ProtocolError

CATALOG = Catalog(
    voices=frozenset({"af_heart", "bm_george"}),
    languages=frozenset({"en-us", "en-gb"}),
    default_voice="af_heart",
    default_lang="en-us",
    max_text_chars=50,
)


def test_the_shape_tells_openais_body_from_ours():
    assert is_speech_body({"model": "tts-1", "input": "Hi.", "voice": "af_heart"})
    assert is_speech_body({"input": "Hi.", "voice": "af_heart"})
    assert not is_speech_body({"text": "Hi.", "voice": "af_heart"})
    assert is_speech_body({"input": "Hi."}), "OpenAI's body without a voice or a model"


def test_a_body_without_a_voice_speaks_the_default_voice_in_its_language():
    request = parse_speech({"input": "Hi."}, CATALOG).synthesize
    assert (request.voice, request.lang) == ("af_heart", "en-us")
    assert parse_speech({"input": "Hi.", "voice": "bm_george"}, CATALOG).synthesize.lang == "en-gb"


def test_openais_defaults_and_our_request():
    speech = parse_speech({"model": "tts-1", "input": "Hello.", "voice": "bm_george"}, CATALOG)
    request = speech.synthesize
    assert (request.text, request.voice, request.format, request.speed) == ("Hello.", "bm_george", "mp3", 1.0)
    assert (speech.stream_format, speech.transport, request.timestamps) == ("audio", "binary", False)


@pytest.mark.parametrize(("asked", "spoken"), [(0.25, 0.5), (0.5, 0.5), (1.5, 1.5), (4.0, 2.0)])
def test_speed_within_openais_range_is_clamped_to_kokoros(asked, spoken):
    assert (
        parse_speech({"input": "Hi.", "voice": "af_heart", "speed": asked}, CATALOG).synthesize.speed
        == spoken
    )


def test_sse_captions_instructions_and_blends():
    speech = parse_speech(
        {
            "input": "Hi there.",
            "voice": "af_heart(2)+bm_george(1)",
            "stream_format": "sse",
            "response_format": "pcm",
            "instructions": "Speak warmly.",
            "return_timestamps": True,
        },
        CATALOG,
    )
    assert speech.synthesize.voice == "af_heart(0.6667)+bm_george(0.3333)"
    assert speech.synthesize.written == "Hi there."
    assert (speech.transport, speech.captioned) == ("sse", True)


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"input": "Hi.", "voice": "af_nobody"}, "unknown_voice", "voice"),
        ({"input": "Hi.", "voice": "af_heart+af_nobody"}, "unknown_voice", "voice"),
        ({"input": "Hi.", "voice": "af_heart(0)+bm_george"}, "invalid_voice_blend", "voice"),
        (
            {"input": "Hi.", "voice": "af_heart", "response_format": "vorbis"},
            "unknown_format",
            "response_format",
        ),
        ({"input": "Hi.", "voice": "af_heart", "speed": 4.5}, "invalid_speed", "speed"),
        ({"input": "Hi.", "voice": "af_heart", "speed": "fast"}, "invalid_speed", "speed"),
        (
            {"input": "Hi.", "voice": "af_heart", "stream_format": "ws"},
            "invalid_stream_format",
            "stream_format",
        ),
        ({"input": "", "voice": "af_heart"}, "empty_text", "input"),
        ({"input": "x" * 51, "voice": "af_heart"}, "text_too_long", "input"),
    ],
)
def test_errors_are_openai_shaped_and_name_the_field(body, code, param):
    with pytest.raises(ProtocolError) as caught:
        parse_speech(body, CATALOG)
    envelope = error_body(caught.value, 400)
    assert envelope["error"]["code"] == code
    assert envelope["error"]["param"] == param
    assert envelope["error"]["type"] == "invalid_request_error"
    assert envelope["error"]["message"]


@pytest.mark.parametrize("field", ["input", "voice", "lang_code"])
def test_a_field_of_the_wrong_type_is_named_as_openai_names_it(field):
    body = {"input": "Hi.", "voice": "af_heart", field: 5}
    with pytest.raises(ProtocolError, match=f"'{field}' must be a string") as caught:
        parse_speech(body, CATALOG)
    assert caught.value.code == "invalid_field"


@pytest.mark.parametrize("value", [False, 0, [], "", {}, 1])
@pytest.mark.parametrize(
    ("member", "code"), [("response_format", "unknown_format"), ("stream_format", "invalid_stream_format")]
)
def test_a_falsy_or_wrong_typed_format_is_refused_not_taken_for_the_default(member, code, value):
    """Only an absent or null member is the default: `false`, `0`, `[]` and "" were silently mp3/audio."""
    with pytest.raises(ProtocolError) as caught:
        parse_speech({"input": "Hi.", "voice": "af_heart", member: value}, CATALOG)
    assert caught.value.code == code and error_body(caught.value, 400)["error"]["param"] == member
    assert parse_speech({"input": "Hi.", "voice": "af_heart", member: None}, CATALOG)
