"""`gpu`: the torch engine on an NVIDIA GPU, measured directly (what `scripts/gpu-check` runs): the
engine's load time, real-time factor and first sentence's audio; the container's first audio for the
answer's first sentence against the whole answer as one message; and a 10-word sentence's first audio
and the aggregate real-time factor with 1, 4 and 16 concurrent sessions (3 requests each).

The engine is `TTS_ENGINE=torch` on `TTS_PROVIDER=cuda` whatever the environment says; the rest of the
container's settings come from the environment. Skipped with its reason where torch sees no CUDA device.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.container import (
    engines_table,
    measure_engine,
    measure_server,
    measure_sessions,
    server_table,
    sessions_table,
)
from benchmarks.texts import ANSWER, ANSWER_FIRST_SENTENCE, TEN_WORDS
from tts.config import TTSConfig

TRIALS = 3
SESSIONS = [1, 4, 16]


def unavailable() -> str | None:
    """Why this machine cannot run the study, or None when it can."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("kokoro") is None:
        return "torch or kokoro is not installed (pip install -e '.[torch]')"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def plot(result: dict[str, Any]) -> report.Figure:
    engine, rows = result["engines"][0], result["sessions"]
    fig, (rtf_ax, first_ax) = report.figure(
        f"Kokoro-82M {engine['engine']} engine on {engine['device']}: load {engine['load_s']} s, "
        f"RTF {engine['rtf']['median']}",
        columns=2,
        width=5,
    )
    rtf = [r["aggregate_rtf"] for r in rows]
    report.session_bars(rtf_ax, rows, rtf, "aggregate real-time factor (lower is faster)", "RTF", "{:.3f}")
    first = [r["first_audio_s"]["median"] * 1000 for r in rows]
    report.session_bars(first_ax, rows, first, "first audio, 10-word sentence (median)", "ms")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    if reason := unavailable():
        return report.skipped("gpu", reason)
    trials = 1 if quick else TRIALS
    config = replace(TTSConfig.from_env(), engine="torch", provider="cuda")
    engines = [measure_engine(config, trials)]
    print(engines_table(engines, trials))
    server = measure_server(config, trials)
    print(server_table(server))
    sessions = measure_sessions(config, SESSIONS)
    print(sessions_table(sessions))
    result = {
        "text": {
            "first_sentence": ANSWER_FIRST_SENTENCE,
            "whole_answer_chars": len(ANSWER),
            "ten_words": TEN_WORDS,
        },
        "trials": trials,
        "engines": engines,
        "server": server,
        "sessions": sessions,
    }
    return report.write(out, "gpu", result, plot(result), quick)
