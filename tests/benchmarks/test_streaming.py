"""The streaming study's tables show the medians they are given."""

from __future__ import annotations

from benchmarks.streaming import peer_table, streaming_tables


def _times(first: float) -> dict[str, float]:
    return {"median": first, "min": first, "max": first}


def test_the_streaming_tables_show_the_medians_they_are_given() -> None:
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
