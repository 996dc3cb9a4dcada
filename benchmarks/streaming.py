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

import asyncio
import contextlib
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.container import TimedAudio, serving, timed_audio
from benchmarks.stats import median_ratio, spread
from benchmarks.texts import ANSWER, ANSWER_FIRST_SENTENCE, SENTENCES_BY_WORDS
from facts import SAMPLE_RATE
from tools.fidelity import mel_distance, seam_click_ratio, seam_mel_distance
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines import export_model
from tts.engines.weights import PYPI_MODEL_NAME
from tts.scheduling.plan import WindowPlan

ARTICLE_FIRST_AUDIO_MS = 156.7  # the article's GPU endpoint, first sentence
TARGET_FIRST_AUDIO_MS = 500.0


def _pcm_to_float(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0


def measure_streaming(config: TTSConfig, trials: int) -> dict[str, Any]:
    """Streamed (the configured plan), streamed on one lane, and whole-segment decoding, side by side,
    alternating, through the WebSocket."""
    configs = {
        "streamed": config,
        "one_lane": replace(config, window_lanes=1),
        "whole": replace(config, window_first_frames=0),
    }
    result: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        served = {mode: stack.enter_context(serving(c)) for mode, c in configs.items()}
        plan = served["streamed"].plan
        result["window_plan"] = plan.__dict__
        for words, text in SENTENCES_BY_WORDS.items():
            runs: dict[str, list[TimedAudio]] = {mode: [] for mode in served}
            for _ in range(trials):
                for mode, server in served.items():
                    runs[mode].append(asyncio.run(timed_audio(server.url, text)))
            result[f"{words}_words"] = _fidelity(runs, plan) | _times(runs)
    return result


def _fidelity(runs: dict[str, list[TimedAudio]], plan: WindowPlan) -> dict[str, Any]:
    """The last streamed audio against the last whole-segment audio: log-mel distance, overall and at
    the plan's seams, and the seams' clicks against the whole audio's at the same places."""
    streamed_audio = _pcm_to_float(runs["streamed"][-1].pcm)
    whole_audio = _pcm_to_float(runs["whole"][-1].pcm)
    frames = len(whole_audio) // SAMPLES_PER_FRAME
    seams = [stop * SAMPLES_PER_FRAME for _, stop in plan.windows(frames)[:-1]]
    return {
        "audio_s": round(len(whole_audio) / SAMPLE_RATE, 3),
        "windows": len(seams) + 1,
        "mel_distance": round(mel_distance(whole_audio, streamed_audio), 3),
        "seam_mel_distance": round(seam_mel_distance(whole_audio, streamed_audio, seams), 3),
        "seam_click_ratio": round(seam_click_ratio(streamed_audio, seams), 2),
        "seam_click_ratio_whole": round(seam_click_ratio(whole_audio, seams), 2),
    }


def _times(runs: dict[str, list[TimedAudio]]) -> dict[str, Any]:
    """Each mode's first audio, completion, hearing and stalls, and the streamed completion against
    the other two modes'."""
    entry: dict[str, Any] = {}
    for mode, values in runs.items():
        entry[f"{mode}_first_audio_s"] = spread([t.first_s for t in values])
        entry[f"{mode}_complete_s"] = spread([t.complete_s for t in values])
        entry[f"{mode}_heard_s"] = spread([t.heard_s for t in values])
        entry[f"{mode}_stalls_s"] = spread([t.stalls_s for t in values])
        entry[f"{mode}_first_over_complete"] = round(
            statistics.median(t.first_s / t.complete_s for t in values), 3
        )
    complete = {mode: [t.complete_s for t in values] for mode, values in runs.items()}
    for baseline in ("whole", "one_lane"):
        entry[f"complete_streamed_over_{baseline}"] = median_ratio(complete["streamed"], complete[baseline])
    return entry


def streaming_tables(streaming: dict[str, Any]) -> str:
    """Two tables, medians: the times (streamed, one lane, whole), then the streamed audio's distance
    from whole-segment audio."""
    entries = {key: entry for key, entry in streaming.items() if key.endswith("_words")}

    def median(entry: dict[str, Any], mode: str, measure: str) -> str:
        return f"{entry[f'{mode}_{measure}_s']['median']:.3f}"

    def three(entry: dict[str, Any], measure: str) -> str:
        return " / ".join(median(entry, mode, measure) for mode in ("streamed", "one_lane", "whole"))

    times = report.table(
        [
            "sentence",
            "first audio: streamed / one lane / whole (s)",
            "first / complete",
            "complete (s)",
            "streamed / one lane",
            "streamed / whole",
            "heard by (s)",
            "stalls: streamed / one lane (s)",
        ],
        [
            (
                key.replace("_", " "),
                three(entry, "first_audio"),
                f"{entry['streamed_first_over_complete']:.2f}",
                three(entry, "complete"),
                f"{entry['complete_streamed_over_one_lane']:.3f}",
                f"{entry['complete_streamed_over_whole']:.3f}",
                three(entry, "heard"),
                f"{median(entry, 'streamed', 'stalls')} / {median(entry, 'one_lane', 'stalls')}",
            )
            for key, entry in entries.items()
        ],
    )
    fidelity = report.table(
        [
            "sentence",
            "audio (s)",
            "windows",
            "mel distance",
            "at the seams",
            "seam clicks",
            "whole, same places",
        ],
        [
            (
                key.replace("_", " "),
                f"{entry['audio_s']:.2f}",
                entry["windows"],
                f"{entry['mel_distance']:.3f}",
                f"{entry['seam_mel_distance']:.3f}",
                f"{entry['seam_click_ratio']:.2f}",
                f"{entry['seam_click_ratio_whole']:.2f}",
            )
            for key, entry in entries.items()
        ],
    )
    return f"{times}\n\n{fidelity}"


def measure_peer(config: TTSConfig, trials: int) -> dict[str, Any]:
    """Whole-text time: our server (streamed, through the WebSocket) vs kokoro-onnx `create_stream`."""
    try:
        from kokoro_onnx import Kokoro
    except ImportError:
        return {"skipped": "kokoro-onnx is not installed (pip install --no-deps kokoro-onnx==0.6.1)"}

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = export_model(Path(tmp), "onnx", config.cache_dir)
        peer = Kokoro(str(model_dir / PYPI_MODEL_NAME), str(model_dir / "voices.npz"))

        async def peer_run(text: str) -> float:
            started = time.perf_counter()
            async for _ in peer.create_stream(text, voice=config.voice, speed=1.0, lang=config.lang):
                pass
            return time.perf_counter() - started

        asyncio.run(peer_run(ANSWER_FIRST_SENTENCE))
        result: dict[str, Any] = {}
        one_lane = replace(config, window_lanes=1)
        with serving(config) as ours, serving(one_lane) as ours_one_lane:
            for name, text in (("20_words", SENTENCES_BY_WORDS[20]), ("answer", ANSWER)):
                runs: dict[str, list[float]] = {"ours": [], "ours_one_lane": [], "kokoro_onnx": []}
                for _ in range(trials):
                    runs["ours"].append(asyncio.run(timed_audio(ours.url, text)).complete_s)
                    runs["ours_one_lane"].append(asyncio.run(timed_audio(ours_one_lane.url, text)).complete_s)
                    runs["kokoro_onnx"].append(asyncio.run(peer_run(text)))
                result[name] = {
                    "ours_complete_s": spread(runs["ours"]),
                    "ours_one_lane_complete_s": spread(runs["ours_one_lane"]),
                    "kokoro_onnx_s": spread(runs["kokoro_onnx"]),
                    "ours_over_kokoro_onnx": median_ratio(runs["ours"], runs["kokoro_onnx"]),
                    "ours_one_lane_over_kokoro_onnx": median_ratio(
                        runs["ours_one_lane"], runs["kokoro_onnx"]
                    ),
                }
    return result


def peer_table(peer: dict[str, Any]) -> str:
    if "skipped" in peer:
        return f"peer: {peer['skipped']}"
    return report.table(
        [
            "text",
            "ours (s)",
            "ours, one lane (s)",
            "kokoro-onnx (s)",
            "ours / kokoro-onnx",
            "one lane / kokoro-onnx",
        ],
        [
            (
                name.replace("_", " "),
                f"{entry['ours_complete_s']['median']:.2f}",
                f"{entry['ours_one_lane_complete_s']['median']:.2f}",
                f"{entry['kokoro_onnx_s']['median']:.2f}",
                f"{entry['ours_over_kokoro_onnx']:.3f}",
                f"{entry['ours_one_lane_over_kokoro_onnx']:.3f}",
            )
            for name, entry in peer.items()
        ],
    )


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
