"""The playback study's listener: it waits only for audio that is late."""

from __future__ import annotations


def test_the_playback_listener_waits_only_for_audio_that_is_late() -> None:
    """A player starting at the first audio, at real time: 0.3 s arrives at 0.2 s, the next 1.0 s at
    0.7 s (0.2 s late: a stall after 0.3 s of audio), then 0.5 s at 1.6 s (in time: 0.1 s to spare)."""
    from benchmarks.playback import Arrival, playback, summarize_level

    heard = playback([Arrival(0.2, 0.3), Arrival(0.7, 1.0), Arrival(1.6, 0.5)])
    assert heard["first_audio_ms"] == 200.0 and heard["audio_s"] == 1.8
    assert heard["stalls"] == 1 and heard["stall_s"] == 0.2 and heard["max_stall_ms"] == 200.0
    assert heard["first_stall_at_s"] == 0.5 and heard["first_stall_after_audio_s"] == 0.3
    assert heard["heard_by_s"] == 2.2
    alone = playback([Arrival(0.1, 0.5), Arrival(0.5, 0.5)])
    assert alone["stalls"] == 0 and alone["first_stall_at_s"] is None
    level = summarize_level([heard, alone])
    assert level["worst_stall_s"] == 0.2 and level["sessions_with_stall_over_50_ms"] == 1
    assert level["first_audio_ms_median"] == 150.0 and level["first_audio_ms_max"] == 200.0
