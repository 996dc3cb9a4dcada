"""The container's measurements' tables show the medians they are given."""

from __future__ import annotations

from benchmarks.container import sessions_table


def _times(first: float) -> dict[str, float]:
    return {"median": first, "min": first, "max": first}


def test_the_sessions_table_shows_the_medians_it_is_given() -> None:
    rows = [
        {"sessions": 1, "aggregate_rtf": 0.0412, "first_audio_s": _times(0.05)},
        {"sessions": 16, "aggregate_rtf": 0.0123, "first_audio_s": _times(0.4)},
    ]
    rows[0]["server_first_audio_10_words_s"] = _times(0.047)
    sessions = sessions_table(rows)
    assert "first audio alone: 0.047 s" in sessions and "0.012" in sessions and "0.400" in sessions
