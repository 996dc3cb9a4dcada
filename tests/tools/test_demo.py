"""The demo's report: each term explained in one line before the table uses it, per mode how long
before (or after) the answer was complete speech began, and a closing line saying which mode reached
first audio sooner, and by how much."""

import pytest

from tools.demo import GLOSSARY, RunResult, report


def summary(bidi_ms: float, batch_ms: float, runs: int = 3, complete_ms: float = 1500.0) -> dict:
    row = {
        "ttft_ms": 250.0,
        "complete_ms": complete_ms,
        "total_ms": 1900.0,
        "chunks": 26,
        "runs": [{}] * runs,
        "heard": "no stall",
    }
    return {
        "bidi": {**row, "ttfa_ms": bidi_ms, "lead_ms": complete_ms - bidi_ms},
        "batch": {**row, "ttfa_ms": batch_ms, "lead_ms": complete_ms - batch_ms},
        "ratio": batch_ms / bidi_ms,
    }


def table_row(lines: list[str], mode: str) -> str:
    (row,) = [line for line in lines if line.split()[0] == mode and line.split()[1].endswith("ms")]
    return row


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
    assert lines[0] == "Two ways to speak the same answer, the median of 3 runs each:"
    assert lines[-1] == closing
    assert f"{bidi_ms:.0f}ms" in table_row(lines, "bidi")
    assert f"{batch_ms:.0f}ms" in table_row(lines, "batch")


def test_one_run_is_not_called_a_median():
    assert (
        report(summary(800.0, 1840.0, runs=1)).splitlines()[0]
        == "Two ways to speak the same answer, one run each:"
    )


def test_each_mode_says_how_long_before_or_after_the_answer_was_complete_speech_began():
    lines = report(summary(800.0, 4100.0, complete_ms=3400.0)).splitlines()
    assert "bidi: speech began 2.6 s before the answer was complete" in lines
    assert "batch: speech began 0.7 s after the answer was complete" in lines
    assert "3400ms" in table_row(lines, "bidi")


def test_speech_within_a_tenth_of_completion_began_as_the_answer_was_complete():
    lines = report(summary(1480.0, 1530.0, complete_ms=1500.0)).splitlines()
    assert "bidi: speech began as the answer was complete" in lines
    assert "batch: speech began as the answer was complete" in lines


def test_every_term_is_explained_in_one_line_before_the_table_uses_it():
    lines = report(summary(800.0, 1840.0)).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("mode "))
    explained = {
        line.split("  ")[1].strip(): i for i, line in enumerate(lines[:header]) if line.startswith("  ")
    }
    assert set(explained) == {term for term, _ in GLOSSARY}
    assert {"bidi", "batch", "first text", "first audio", "complete", "chunks", "stall"} <= set(explained)
    assert "TTFA" in lines[explained["first audio"]], "the closing line's TTFA is named where first audio is"
    for term in ("first text", "first audio", "complete", "chunks"):
        assert term in lines[header]


def test_a_run_s_lead_is_the_time_from_first_audio_to_the_answer_s_last_text():
    bidi = RunResult(
        "bidi", ttft_ms=300.0, ttfa_ms=900.0, complete_ms=3500.0, total_ms=9000.0, chunks=90, text=""
    )
    batch = RunResult(
        "batch", ttft_ms=300.0, ttfa_ms=4300.0, complete_ms=3500.0, total_ms=9500.0, chunks=90, text=""
    )
    assert bidi.lead_ms == 2600.0 and batch.lead_ms == -800.0


def test_each_mode_says_what_its_listener_heard_in_the_worst_run():
    figures = summary(800.0, 1840.0)
    figures["bidi"]["heard"] = "1 stall, 0.21 s in all, the first after 0.3 s of audio"
    lines = report(figures).splitlines()
    assert (
        "bidi: the listener heard 1 stall, 0.21 s in all, the first after 0.3 s of audio (the worst run)"
        in lines
    )
    assert "batch: the listener heard no stall (the worst run)" in lines
    one = summary(800.0, 1840.0, runs=1)
    assert "bidi: the listener heard no stall" in report(one).splitlines()
