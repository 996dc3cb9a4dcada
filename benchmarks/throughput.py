"""`throughput`: how one container shares itself. N = 1, 2, 4, 8 concurrent sessions on one endpoint
with one replica, through the emulator with the official HTTP/2 client (one connection, one stream per
session, as the agent does), each session speaking the same text at the same moment. Reports the
aggregate audio seconds produced per wall-clock second (above 1.0 the container keeps up with real
time for everyone together) and each session's time to first audio (p50, p95).

The container computes one step at a time, earliest deadline first over its sessions, so adding
sessions shares the same compute: aggregate throughput stays about flat while time to first audio grows
with N.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client

from benchmarks import report
from benchmarks.emulated import EmulatorProcess, speak
from benchmarks.stats import summarize
from benchmarks.texts import ARTICLE_TEXT, FIRST_SENTENCE

LEVELS = (1, 2, 4, 8)


async def level(client: AsyncSageMakerRuntimeHTTP2Client, sessions: int, text: str) -> dict[str, Any]:
    start = time.perf_counter()
    async with asyncio.timeout(600):
        results = await asyncio.gather(*(speak(client, text, since=start) for _ in range(sessions)))
    wall = time.perf_counter() - start
    audio_s = sum(seconds for _, seconds in results)
    ttfa = summarize([ms for ms, _ in results])
    return {
        "sessions": sessions,
        "wall_s": round(wall, 3),
        "audio_s": round(audio_s, 3),
        "audio_s_per_wall_s": round(audio_s / wall, 3),
        "ttfa_ms": ttfa | {"all": [round(ms, 1) for ms, _ in results]},
    }


async def measure(text: str) -> list[dict[str, Any]]:
    with EmulatorProcess() as emu:
        client = await emu.client()
        await speak(client, FIRST_SENTENCE)  # warm-up
        return [await level(client, n, text) for n in report.progress(LEVELS, "concurrency levels")]


def plot(result: dict[str, Any]) -> report.Figure:
    levels = result["levels"]
    n = [lv["sessions"] for lv in levels]
    fig, (rate_ax, ttfa_ax) = report.figure(
        f"Concurrent sessions on one container ({result['text_chars']}-character text each)", columns=2
    )
    rate_ax.plot(
        n, [lv["audio_s_per_wall_s"] for lv in levels], "o-", color=report.OURS, label="all sessions together"
    )
    report.reference_line(rate_ax, 1.0, "real time (1 s of audio per second)")
    for key, label, style in (("median_ms", "p50", "o-"), ("p95_ms", "p95", "s--")):
        ttfa_ax.plot(n, [lv["ttfa_ms"][key] for lv in levels], style, color=report.OURS, label=label)
    for ax, ylabel, title in (
        (rate_ax, "audio seconds produced per wall-clock second", "aggregate throughput"),
        (ttfa_ax, "time to first audio per session (ms)", "each session's wait for its first audio"),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xticks(n, [str(v) for v in n])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("concurrent sessions")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    text = FIRST_SENTENCE if quick else ARTICLE_TEXT
    levels = asyncio.run(measure(text))
    result = {"text_chars": len(text), "levels": levels}
    rows = [
        (
            lv["sessions"],
            lv["audio_s_per_wall_s"],
            lv["ttfa_ms"]["median_ms"],
            lv["ttfa_ms"]["p95_ms"],
            lv["wall_s"],
        )
        for lv in levels
    ]
    print(report.table(["sessions", "audio s / wall s", "TTFA p50 (ms)", "TTFA p95 (ms)", "wall (s)"], rows))
    return report.write(out, "throughput", result, plot(result), quick)
