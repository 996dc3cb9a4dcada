"""The listener model (tools.listener): playback starts at the first audio and runs at real time; a
wait for audio that has not arrived is a stall, placed by wall time and by the audio heard before it."""

import pytest

from tools.listener import STALL_FLOOR_S, Arrival, Stall, listen


def test_audio_that_arrives_in_time_is_buffered_and_late_audio_is_a_stall():
    # 0.3 s at 0.2; 1.0 s at 0.7 (the player ran dry at 0.5: 0.2 s late); 0.5 s at 1.6 (in time).
    heard = listen([Arrival(0.2, 0.3), Arrival(0.7, 1.0), Arrival(1.6, 0.5)])
    assert heard.first_s == 0.2 and heard.audio_s == pytest.approx(1.8)
    assert heard.stalls == [Stall(0.5, 0.3, pytest.approx(0.2))]
    assert heard.heard_by_s == pytest.approx(2.2)
    assert heard.summary() == "1 stall, 0.20 s in all, the first after 0.3 s of audio"


def test_jitter_under_the_floor_is_not_a_stall_and_two_stalls_are_counted():
    assert listen([Arrival(0.0, 0.1), Arrival(0.1 + STALL_FLOOR_S / 2, 0.1)]).summary() == "no stall"
    heard = listen([Arrival(0.0, 0.1), Arrival(0.3, 0.1), Arrival(0.6, 0.1)])
    assert [round(s.length_s, 3) for s in heard.stalls] == [0.2, 0.2]
    assert heard.summary() == "2 stalls, 0.40 s in all, the first after 0.1 s of audio"


def test_no_audio_is_an_error_not_a_clean_listen():
    with pytest.raises(ValueError, match="no audio"):
        listen([])
