"""agent.listening's pure parts: how much of a turn the listener has played (what a barge-in records)
and the checks on what the client sends. The conversation itself runs against the real containers in
tests/integration/test_listening.py."""

from __future__ import annotations

import base64
import time

import pytest

from agent.events import EventClock, TurnError, agent_start, audio_chunk
from agent.listening import parse_message, parse_played
from agent.turn_taking import Playback
from facts import PCM_BYTES_PER_S


def _pcm_chunk(clock: EventClock, ms: int) -> dict:
    return audio_chunk(clock, 0, b"\x00" * (PCM_BYTES_PER_S * ms // 1000), 0)


def test_nothing_is_played_before_the_first_audio() -> None:
    playback = Playback()
    playback.sent(agent_start(EventClock(), "bidi", "v", "pcm"))
    assert playback.played_ms() == 0.0


def test_without_a_report_the_listener_plays_in_real_time_up_to_the_audio_sent() -> None:
    clock, playback = EventClock(), Playback()
    playback.sent(agent_start(clock, "bidi", "v", "pcm"))
    playback.sent(_pcm_chunk(clock, 100))
    time.sleep(0.05)
    assert 40 <= playback.played_ms() <= 100
    time.sleep(0.1)
    assert playback.played_ms() == 100.0, "never more than the PCM it was sent"


def test_a_report_is_the_position_and_the_time_since_it_is_added() -> None:
    clock, playback = EventClock(), Playback()
    playback.sent(agent_start(clock, "bidi", "v", "pcm"))
    playback.sent(_pcm_chunk(clock, 5000))
    playback.reported(1200.0)  # the player stalled: it is behind the wall clock
    time.sleep(0.05)
    assert 1240 <= playback.played_ms() <= 1300


def test_a_codecs_chunks_set_no_ceiling_and_a_new_turn_starts_from_nothing() -> None:
    clock, playback = EventClock(), Playback()
    playback.sent(agent_start(clock, "bidi", "v", "mp3"))
    playback.sent(audio_chunk(clock, 0, base64.b64decode("AAAA"), 0))
    playback.reported(3000.0)
    assert playback.played_ms() >= 3000
    playback.turn_started()
    assert playback.played_ms() == 0.0


def test_audio_sent_but_not_yet_played_is_still_playing_until_a_barge_in_stops_it() -> None:
    """A turn's audio is computed faster than real time: the turn ends while its listener still plays
    it, and talking over that is a barge-in too (agent.listening.Conversation._interrupt)."""
    clock, playback = EventClock(), Playback()
    assert not playback.playing()
    playback.sent(agent_start(clock, "bidi", "v", "pcm"))
    playback.sent(_pcm_chunk(clock, 5000))
    playback.reported(1200.0)
    assert playback.playing()
    playback.stopped()
    heard = playback.played_ms()
    time.sleep(0.03)
    assert not playback.playing() and playback.played_ms() == heard, "nothing more is played"
    playback.reported(4999.0)
    assert playback.played_ms() == heard, "never past where it stopped"
    time.sleep(0.11)
    playback.turn_started()
    playback.sent(agent_start(clock, "bidi", "v", "pcm"))
    playback.sent(_pcm_chunk(clock, 100))
    time.sleep(0.11)
    assert not playback.playing(), "all 100 ms were played"


def test_a_codecs_audio_is_never_known_to_be_still_playing() -> None:
    clock, playback = EventClock(), Playback()
    playback.sent(agent_start(clock, "bidi", "v", "mp3"))
    playback.sent(audio_chunk(clock, 0, base64.b64decode("AAAA"), 0))
    assert not playback.playing()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{", "invalid_json"),
        ("[1]", "invalid_message"),
        ('"x"', "invalid_message"),
        ("1" * 5000, "invalid_json"),  # past Python's integer-digits limit
    ],
)
def test_a_text_frame_must_be_a_json_object(text: str, code: str) -> None:
    with pytest.raises(TurnError) as refused:
        parse_message(text)
    assert refused.value.code == code


@pytest.mark.parametrize("value", [-1, True, "10", None, 86_400_001, float("nan")])
def test_played_must_be_a_number_of_ms(value: object) -> None:
    with pytest.raises(TurnError) as refused:
        parse_played({"type": "played", "played_ms": value})
    assert refused.value.code == "invalid_played"


def test_the_pcm_sent_is_counted_from_the_base64_length_exactly() -> None:
    clock = EventClock()
    for size in (0, 1, 2, 3, 4800, 4801):
        playback = Playback()
        playback.sent(agent_start(clock, "bidi", "v", "pcm"))
        playback.sent(audio_chunk(clock, 0, b"\x01" * size, 0))
        playback.reported(1e6)  # far ahead: what was sent is the ceiling
        assert playback.played_ms() == round(size * 1000 / PCM_BYTES_PER_S, 1)
