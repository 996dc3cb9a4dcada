"""`engines`: the TTS engines side by side on this machine's CPU: time until the container answers
`/ping` (process start, model load, warm-up), real-time factor (compute seconds per second of audio;
below 1.0 is faster than real time) and time to first audio of a first sentence, over the container's
own WebSocket (no emulator: this compares engines, not transports).

Each engine runs as `python -m tts serve` with `TTS_ENGINE=<name>`. An engine this tree or this machine
cannot run is skipped with its reason; ONNX (the default, int8) always runs.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.container import timed_audio, tts_process, websocket_url
from benchmarks.texts import ARTICLE_TEXT, FIRST_SENTENCE
from facts import PCM_BYTES_PER_S

ENGINES = ("onnx", "torch")


def unavailable(engine: str) -> str | None:
    """Why `engine` cannot run here, or None when it can."""
    if engine == "onnx":
        return None
    missing = [name for name in ("torch", "kokoro") if importlib.util.find_spec(name) is None]
    if missing:
        return f"not installed: {', '.join(missing)} (pip install -e '.[torch]')"
    return None


def measure(engine: str, trials: int) -> dict[str, Any]:
    started = time.perf_counter()
    with tts_process({"TTS_ENGINE": engine}) as base:
        ready_s = time.perf_counter() - started
        url = websocket_url(base)
        first_ms, rtfs = [], []
        for _ in report.progress(range(trials), f"{engine}: trials"):
            first_ms.append(asyncio.run(timed_audio(url, FIRST_SENTENCE)).first_s * 1000)
            answer = asyncio.run(timed_audio(url, ARTICLE_TEXT))
            rtfs.append(answer.complete_s / (len(answer.pcm) / PCM_BYTES_PER_S))
    return {
        "engine": engine,
        "ready_s": round(ready_s, 2),
        "rtf": round(statistics.median(rtfs), 3),
        "first_audio_ms": round(statistics.median(first_ms), 1),
        "rtf_all": [round(v, 3) for v in rtfs],
        "first_audio_ms_all": [round(v, 1) for v in first_ms],
    }


def plot(result: dict[str, Any]) -> report.Figure:
    measured = result["engines"]
    fig, axes = report.figure("TTS engines on this machine's CPU (Kokoro-82M)", columns=3, width=4.2)
    names = [m["engine"] for m in measured]
    x = np.arange(len(names))
    for ax, key, label, fmt in (
        (axes[0], "ready_s", "start to ready: load + warm-up (s)", "{:.1f}"),
        (axes[1], "rtf", "real-time factor (compute s per audio s)", "{:.2f}"),
        (axes[2], "first_audio_ms", "first audio of a first sentence (ms)", "{:.0f}"),
    ):
        bars = ax.bar(x, [m[key] for m in measured], 0.5, color=report.OURS)
        report.label_bars(ax, bars, fmt)
        ax.set_xticks(x, names)
        ax.set_ylabel(label)
        ax.set_xlabel("engine (TTS_ENGINE)")
    report.reference_line(axes[1], 1.0, "real time")
    axes[1].legend(fontsize=8)
    if result["skipped"]:
        fig.text(
            0.01, 0.01, "skipped: " + "; ".join(f"{k}: {v}" for k, v in result["skipped"].items()), fontsize=7
        )
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    trials = 1 if quick else 5
    measured, skipped = [], {}
    for engine in ENGINES:
        reason = unavailable(engine)
        if reason:
            print(f"skipping engine {engine}: {reason}")
            skipped[engine] = reason
            continue
        measured.append(measure(engine, trials))
    result = {"trials": trials, "engines": measured, "skipped": skipped}
    rows = [(m["engine"], m["ready_s"], m["rtf"], m["first_audio_ms"]) for m in measured]
    print(report.table(["engine", "ready (s)", "real-time factor", "first audio (ms)"], rows))
    return report.write(out, "engines", result, plot(result), quick)
