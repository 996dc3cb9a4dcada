"""The demo's closing line says which mode reached first audio sooner, and by how much."""

import pytest

from agent.demo import report


def summary(bidi_ms: float, batch_ms: float, runs: int = 3) -> dict:
    row = {"ttft_ms": 250.0, "total_ms": 1900.0, "chunks": 26, "runs": [{}] * runs}
    return {
        "bidi": {**row, "ttfa_ms": bidi_ms},
        "batch": {**row, "ttfa_ms": batch_ms},
        "ratio": batch_ms / bidi_ms,
    }


@pytest.mark.parametrize(
    ("bidi_ms", "batch_ms", "closing"),
    [
        (800.0, 1840.0, "bidi TTFA is 2.3x faster than batch"),
        (1300.0, 900.0, "bidi TTFA is 1.4x slower than batch"),
        (857.0, 846.0, "bidi and batch reach first audio together (batch/bidi 0.99)"),
        (846.0, 870.0, "bidi and batch reach first audio together (batch/bidi 1.03)"),
        (1104.0, 976.0, "bidi and batch reach first audio together (batch/bidi 0.88)"),
    ],
)
def test_the_closing_line_names_the_faster_mode_or_says_they_are_level(bidi_ms, batch_ms, closing):
    lines = report(summary(bidi_ms, batch_ms)).splitlines()
    assert lines[0] == "bidi vs batch, the median of 3 runs each:"
    assert lines[-1] == closing
    assert lines[2].split()[0] == "bidi" and f"{bidi_ms:.0f}ms" in lines[2]


def test_one_run_is_not_called_a_median():
    assert report(summary(800.0, 1840.0, runs=1)).splitlines()[0] == "bidi vs batch, one run each:"
