"""`streaming`: first audio from inside the sentence. The container's WebSocket, three servers in this
process: one streams each segment step by step (the configured `TTS_WINDOW_*` plan, on a CPU two
windows side by side after the first), one streams window by window on one lane
(`TTS_WINDOW_LANES=1`), one decodes each segment whole (`TTS_WINDOW_FIRST_FRAMES=0`); asked in turn for
a 10-, a 20- and a 25-word sentence. First audio, completion and when a listener hears the end, per
case, with the streamed audio's distance from whole-segment audio. Then whole-text time against the
peer library kokoro-onnx (`Kokoro.create_stream`, same int8 model, same voice, alternating), when it is
installed (`pip install --no-deps kokoro-onnx==0.6.1`).

Targets (issue 13, 2-core CPU): a 20-word sentence's first audio at most 500 ms and at most 35% of its
completion; whole-text time at least as fast as kokoro-onnx. The article's GPU endpoint: 156.7 ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.container import measure_peer, measure_streaming, peer_table, streaming_tables
from benchmarks.texts import SENTENCES_BY_WORDS
from tts.config import TTSConfig

ARTICLE_FIRST_AUDIO_MS = 156.7  # the article's GPU endpoint, first sentence
TARGET_FIRST_AUDIO_MS = 500.0


def plot(result: dict[str, Any]) -> report.Figure:
    streaming, peer = result["streaming"], result["peer"]
    fig, (first_ax, peer_ax) = report.figure(
        "Streaming inside a segment: first audio and whole-text time (container WebSocket, this CPU)",
        columns=2,
    )
    words = list(SENTENCES_BY_WORDS)
    x = np.arange(len(words))
    for offset, mode, color, label in (
        (-0.2, "streamed", report.OURS, "streamed (window by window)"),
        (0.2, "whole", report.SECOND, "whole segment"),
    ):
        values = [streaming[f"{n}_words"][f"{mode}_first_audio_s"]["median"] * 1000 for n in words]
        bars = first_ax.bar(x + offset, values, 0.4, color=color, label=label)
        report.label_bars(first_ax, bars, "{:,.0f}")
    report.reference_line(first_ax, TARGET_FIRST_AUDIO_MS, "target for 20 words: 500 ms", color=report.TARGET)
    report.reference_line(first_ax, ARTICLE_FIRST_AUDIO_MS, "the article's GPU endpoint: 156.7 ms")
    first_ax.set_xticks(x, [f"{n} words" for n in words])
    first_ax.set_ylabel("time to first audio byte, median (ms)")
    first_ax.set_title("first audio, streamed vs whole-segment decoding", fontsize=9)
    first_ax.legend(fontsize=8, loc="upper left")
    if "skipped" in peer:
        peer_ax.text(
            0.5, 0.5, f"kokoro-onnx: {peer['skipped']}", ha="center", va="center", wrap=True, fontsize=8
        )
        peer_ax.set_axis_off()
        return fig
    cases = list(peer)
    x = np.arange(len(cases))
    for offset, key, color, label in (
        (-0.27, "ours_complete_s", report.OURS, "ours (streamed, through the WebSocket)"),
        (0.0, "ours_one_lane_complete_s", report.SECOND, "ours on one lane"),
        (0.27, "kokoro_onnx_s", report.ARTICLE, "kokoro-onnx create_stream (in process)"),
    ):
        bars = peer_ax.bar(
            x + offset, [peer[c][key]["median"] for c in cases], 0.27, color=color, label=label
        )
        report.label_bars(peer_ax, bars, "{:.2f}")
    peer_ax.set_xticks(x, [c.replace("_", " ").replace("answer", "four-sentence answer") for c in cases])
    peer_ax.set_ylabel("time to the last audio byte, median (s)")
    peer_ax.set_title("whole-text time vs the peer library (lower is faster)", fontsize=9)
    peer_ax.legend(fontsize=8, loc="upper left")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    trials = 1 if quick else 5
    config = TTSConfig.from_env()
    streaming = measure_streaming(config, trials)
    print(streaming_tables(streaming))
    peer = measure_peer(config, trials)
    print(peer_table(peer))
    result = {"trials": trials, "streaming": streaming, "peer": peer}
    return report.write(out, "streaming", result, plot(result), quick)
