"""`python -m benchmarks`: the framing analysis on hand-made traffic, and two cheap studies run end to end
with --quick, leaving valid JSON and a PNG (no timing asserted: speed targets live in the benchmarks)."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

from benchmarks import gpu, gpu_image, report
from benchmarks.container import peer_table, sessions_table, streaming_tables
from benchmarks.framing import analyze
from benchmarks.stats import median_ratio, spread
from tests.support.paths import REPO
from tts.wire.sse import encode_event


def _events(count: int) -> bytes:
    return b"".join(
        encode_event({"type": "audio_chunk", "seq": n, "data": base64.b64encode(bytes([n]) * 300).decode()})
        for n in range(count)
    )


def test_the_article_case_four_events_in_six_chunks_two_ending_mid_event() -> None:
    stream = _events(4)
    size = len(stream) // 4  # the four events have the same length
    # event 1 whole; event 2 in two chunks; event 3 whole; event 4 in two chunks
    cuts = [0, size, size + 100, 2 * size, 3 * size, 3 * size + 50, 4 * size]
    chunks = [stream[a:b] for a, b in itertools.pairwise(cuts)]
    framing = analyze(chunks)
    assert (framing.events, framing.chunks, framing.chunks_ending_mid_event) == (4, 6, 2)
    assert framing.naive_events == 2 and framing.naive_failures == 4
    assert framing.buffered_events == 4 and framing.buffered_failures == 0
    assert framing.audio_bytes_match


def test_whole_events_per_chunk_are_fine_for_both_consumers() -> None:
    stream = _events(3)
    size = len(stream) // 3
    framing = analyze([stream[i * size : (i + 1) * size] for i in range(3)])
    assert framing.chunks_ending_mid_event == 0
    assert framing.naive_failures == 0 and framing.buffered_failures == 0


def test_an_unknown_study_is_refused_with_the_list() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "nope"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "unknown study nope" in result.stderr and "transport" in result.stderr


@pytest.mark.integration  # real servers: the emulator, the echo and Kokoro containers, official clients
def test_quick_studies_write_json_and_png(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "emulator", "framing", "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    for study in ("emulator", "framing"):
        image = matplotlib.image.imread(tmp_path / f"{study}.png")
        assert image.shape[0] > 300 and image.shape[1] > 600, "a readable figure"
    emulator = json.loads((tmp_path / "emulator.json").read_text())
    assert emulator["study"] == "emulator" and emulator["quick"] is True and emulator["machine"]["cpus"]
    assert emulator["round_trip"]["through_emulator"]["count"] == 200
    assert emulator["round_trip"]["direct_websocket"]["count"] == 200
    assert emulator["concurrency"]["sessions"] == 50 and emulator["concurrency"]["errors"] == 0
    assert emulator["concurrency"]["messages"] > 50
    framing = json.loads((tmp_path / "framing.json").read_text())
    assert framing["totals"]["chunks_ending_mid_event"] > 0, "re-chunking was on"
    assert framing["naive_failures"] > 0
    assert framing["buffered_failures"] == 0 and framing["buffered_audio_intact"] is True
    assert framing["totals"]["buffered_events"] == framing["totals"]["events"]
    assert "naive consumer" in result.stdout


def test_a_few_trials_are_summed_up_as_median_min_max_and_paired_ratios() -> None:
    assert spread([0.3, 0.1004, 0.2]) == {"median": 0.2, "min": 0.1, "max": 0.3}
    # pairs (1/2, 3/2, 4/2): the median of the ratios, not the ratio of the medians (3/2)
    assert median_ratio([1.0, 3.0, 4.0], [2.0, 2.0, 2.0]) == 1.5


def _times(first: float) -> dict[str, float]:
    return {"median": first, "min": first, "max": first}


def test_the_container_tables_show_the_medians_they_are_given() -> None:
    entry: dict = {"audio_s": 3.2, "windows": 4, "mel_distance": 0.123, "seam_mel_distance": 0.2}
    entry |= {"seam_click_ratio": 0.91, "seam_click_ratio_whole": 0.88, "streamed_first_over_complete": 0.31}
    entry |= {"complete_streamed_over_one_lane": 0.944, "complete_streamed_over_whole": 1.021}
    for n, mode in enumerate(("streamed", "one_lane", "whole")):
        for m, measure in enumerate(("first_audio", "complete", "heard", "stalls")):
            entry[f"{mode}_{measure}_s"] = _times(0.111 * (n + 1) + m)
    tables = streaming_tables({"window_plan": {}, "20_words": entry})
    assert "20 words" in tables and "0.111 / 0.222 / 0.333" in tables  # first audio, the three modes
    assert "1.111 / 1.222 / 1.333" in tables and "3.111 / 3.222" in tables  # complete; stalls
    assert "0.944" in tables and "1.021" in tables and "0.123" in tables and "0.88" in tables
    peer = {"answer": {"ours_complete_s": _times(3.23), "ours_one_lane_complete_s": _times(3.28)}}
    peer["answer"] |= {"kokoro_onnx_s": _times(3.4), "ours_over_kokoro_onnx": 0.95}
    peer["answer"] |= {"ours_one_lane_over_kokoro_onnx": 0.965}
    assert all(figure in peer_table(peer) for figure in ("3.23", "3.28", "3.40", "0.950", "0.965"))
    assert peer_table({"skipped": "kokoro-onnx is not installed"}) == "peer: kokoro-onnx is not installed"
    rows = [
        {"sessions": 1, "aggregate_rtf": 0.0412, "first_audio_s": _times(0.05)},
        {"sessions": 16, "aggregate_rtf": 0.0123, "first_audio_s": _times(0.4)},
    ]
    rows[0]["server_first_audio_10_words_s"] = _times(0.047)
    sessions = sessions_table(rows)
    assert "first audio alone: 0.047 s" in sessions and "0.012" in sessions and "0.400" in sessions


def test_the_gpu_study_draws_its_sessions(tmp_path: Path) -> None:
    engine = {"engine": "torch", "device": "cuda (NVIDIA H200)", "load_s": 4.1, "rtf": _times(0.01)}
    result = {
        "engines": [engine],
        "sessions": [
            {"sessions": n, "aggregate_rtf": 0.01 * n, "first_audio_s": _times(0.05)} for n in (1, 4, 16)
        ],
    }
    report.save_figure(tmp_path, "gpu", gpu.plot(result), quick=False)
    image = matplotlib.image.imread(tmp_path / "gpu.png")
    assert image.shape[0] > 300 and image.shape[1] > 600, "a readable figure"


def test_the_gpu_image_study_counts_the_sessions_that_held_real_time_and_draws_them(tmp_path: Path) -> None:
    rows = [
        {"sessions": n, "first_audio_s": _times(0.05 * n), "max_stall_s": stall}
        for n, stall in ((1, 0.0), (2, 0.01), (4, 0.05), (8, 0.3))
    ]
    assert gpu_image.real_time_sessions(rows) == 4  # 50 ms is still real time, 300 ms is not
    assert gpu_image.real_time_sessions(rows[3:]) == 0
    result = {"gpu": "NVIDIA A10G, 550.127", "rtf": _times(0.02), "vram_mib": {"peak": 1800}}
    result |= {"sessions": rows, "real_time_sessions": 4}
    report.save_figure(tmp_path, "gpu_image", gpu_image.plot(result), quick=False)
    assert matplotlib.image.imread(tmp_path / "gpu_image.png").shape[1] > 600


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
