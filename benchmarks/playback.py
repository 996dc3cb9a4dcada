"""`playback`: what each listener hears when several sessions speak at once, stalls included.

N sessions (1-8; `--quick`: 1-4) open together on one replica and each sends a held-out four-sentence
answer (`texts.PLAYBACK_ANSWERS`, session n speaks answer n mod 8; each opens with a 20-word sentence)
as a voice agent does: one message per sentence, all at once, PCM. Both transports: the container's
WebSocket directly (`python -m tts serve` as its own process), and through the emulator with the
official HTTP/2 client (one connection, one stream per session, as the agent does).

The listener is modelled as a player that starts when its session's first audio arrives and plays at
real time, the four sentences back to back; when the next audio has not arrived by the time the last
has played, the player waits: a stall. Per session: first audio, the number of stalls (waits of
STALL_FLOOR_S or more), their total, the longest, and when the first one happens (wall seconds from the
start, and seconds of audio heard before it). The replica's `/ping` is read every 0.25 s meanwhile:
the most sessions it counted, the capacity it claimed, and whether it said it was saturated.

Targets (issue 27, a quiet 2-core CPU): one session never stalls and hears its first audio within
400 ms; three sessions have no stall over 50 ms; four: reported as measured.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from agent.chunker import split_sentences
from benchmarks import report
from benchmarks.container import tts_process, websocket_url
from benchmarks.emulated import EmulatorProcess
from benchmarks.texts import PLAYBACK_ANSWERS
from facts import DEFAULT_VOICE, TTS_ENDPOINT
from tools.listener import STALL_FLOOR_S, Arrival, listen
from tools.tts_client import connect, open_endpoint, speak

LEVELS = (1, 2, 3, 4, 5, 6, 7, 8)
QUICK_LEVELS = (1, 2, 3, 4)
TRANSPORTS = ("websocket", "emulator")
TARGET_FIRST_AUDIO_MS = 400.0
TARGET_MAX_STALL_MS = 50.0
SESSION_TIMEOUT_S = 600.0


def playback(arrivals: list[Arrival]) -> dict[str, Any]:
    """The listener's view of one session (tools.listener: a player that starts at the first audio and
    plays at real time, waiting whenever the next audio has not arrived yet)."""
    if not arrivals:
        raise RuntimeError("the session ended without audio")
    heard = listen(arrivals)
    stalls = heard.stalls
    return {
        "first_audio_ms": round(heard.first_s * 1000, 1),
        "audio_s": round(heard.audio_s, 3),
        "stalls": len(stalls),
        "stall_s": round(heard.stall_s, 3),
        "max_stall_ms": round(max((s.length_s for s in stalls), default=0.0) * 1000, 1),
        "first_stall_at_s": round(stalls[0].at_s, 3) if stalls else None,
        "first_stall_after_audio_s": round(stalls[0].after_audio_s, 3) if stalls else None,
        "heard_by_s": round(heard.heard_by_s, 3),
        "last_audio_at_s": round(arrivals[-1].at_s, 3),
    }


async def websocket_session(url: str, text: str, since: float) -> list[Arrival]:
    """`text` sentence by sentence on a fresh WebSocket to the container."""
    messages = [
        {"text": sentence, "request_id": str(n), "voice": DEFAULT_VOICE}
        for n, sentence in enumerate(split_sentences(text))
    ]
    async with connect(url) as channel:
        transcript = await speak(channel, messages, SESSION_TIMEOUT_S)
    return transcript.arrivals(since)


async def emulator_session(client: Any, text: str, since: float) -> list[Arrival]:
    """`text` sentence by sentence on a fresh session through the emulator (the official client), with
    word timings as the agent asks for them."""
    messages = [
        {
            "text": sentence,
            "request_id": f"{n}-{uuid.uuid4().hex[:8]}",
            "voice": DEFAULT_VOICE,
            "format": "pcm",
            "timestamps": True,
        }
        for n, sentence in enumerate(split_sentences(text))
    ]
    async with open_endpoint(client, TTS_ENDPOINT) as channel:
        transcript = await speak(channel, messages, SESSION_TIMEOUT_S)
    return transcript.arrivals(since)


async def watch_load(ping_url: str, seen: list[dict[str, Any]]) -> None:
    """Every 0.25 s until cancelled: what the replica's `/ping` says about its load
    (tts/scheduling/scheduler.py)."""
    async with httpx.AsyncClient(trust_env=False) as client:
        while True:
            load = (await client.get(ping_url, timeout=5.0)).json().get("load")
            if load is not None:
                seen.append(load)
            await asyncio.sleep(0.25)


async def level(speak: Any, sessions: int, ping_url: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each session's playback, and the most the replica said it was serving and could serve."""
    since = time.perf_counter()
    texts = [PLAYBACK_ANSWERS[n % len(PLAYBACK_ANSWERS)] for n in range(sessions)]
    seen: list[dict[str, Any]] = []
    watcher = asyncio.create_task(watch_load(ping_url, seen))
    try:
        async with asyncio.timeout(SESSION_TIMEOUT_S):
            runs = await asyncio.gather(*(speak(text, since) for text in texts))
    finally:
        watcher.cancel()
    load = {
        "most_sessions": max((entry["sessions"] for entry in seen), default=None),
        "capacity": seen[-1]["capacity"] if seen else None,
        # what its calibration claimed (the same as `capacity` unless TTS_CAPACITY sets that)
        "calibrated": (seen[-1].get("calibration") or {}).get("capacity") if seen else None,
        "saturated_seen": any(entry["saturated"] for entry in seen),
    }
    return [playback(arrivals) for arrivals in runs], load


def summarize_level(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    firsts = [s["first_audio_ms"] for s in sessions]
    return {
        "sessions": len(sessions),
        "first_audio_ms_median": round(statistics.median(firsts), 1),
        "first_audio_ms_max": max(firsts),
        "worst_stall_s": max(s["stall_s"] for s in sessions),
        "max_stall_ms": max(s["max_stall_ms"] for s in sessions),
        "stalls_total": sum(s["stalls"] for s in sessions),
        "sessions_with_stall_over_50_ms": sum(s["max_stall_ms"] > TARGET_MAX_STALL_MS for s in sessions),
        "per_session": sessions,
    }


async def measure_levels(speak: Any, levels: tuple[int, ...], ping_url: str) -> list[dict[str, Any]]:
    await speak(PLAYBACK_ANSWERS[0], time.perf_counter())  # warm-up: lazy initialisation, connections
    rows = []
    for n in report.progress(levels, "sessions"):
        sessions, load = await level(speak, n, ping_url)
        rows.append(summarize_level(sessions) | {"replica_load": load})
        await asyncio.sleep(1.0)  # every session's audio is computed; let the replica settle
    return rows


def measure(transport: str, levels: tuple[int, ...]) -> list[dict[str, Any]]:
    if transport == "websocket":
        with tts_process() as base:
            url = websocket_url(base)
            return asyncio.run(
                measure_levels(lambda t, s: websocket_session(url, t, s), levels, f"{base}/ping")
            )
    with EmulatorProcess() as emu:
        ping = f"http://127.0.0.1:{emu.replica_port()}/ping"

        async def run() -> list[dict[str, Any]]:
            client = await emu.client()
            return await measure_levels(lambda t, s: emulator_session(client, t, s), levels, ping)

        return asyncio.run(run())


def _load(load: dict[str, Any]) -> str:
    if load["most_sessions"] is None:
        return "-"
    return f"{load['most_sessions']} / {load['capacity']}{' saturated' if load['saturated_seen'] else ''}"


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (first_ax, stall_ax) = report.figure(
        "Playback: first audio and stalls per listener, concurrent sessions on one replica", columns=2
    )
    for transport, color in zip(TRANSPORTS, (report.OURS, report.SECOND), strict=True):
        rows = result["transports"][transport]
        n = [row["sessions"] for row in rows]
        first_ax.plot(
            n, [r["first_audio_ms_median"] for r in rows], "o-", color=color, label=f"{transport}, median"
        )
        first_ax.plot(
            n, [r["first_audio_ms_max"] for r in rows], "s--", color=color, label=f"{transport}, max"
        )
        stall_ax.plot(
            n, [r["worst_stall_s"] for r in rows], "o-", color=color, label=f"{transport}, worst session"
        )
        stall_ax.plot(
            n, [r["max_stall_ms"] / 1000 for r in rows], "s--", color=color, label=f"{transport}, longest"
        )
    report.reference_line(first_ax, TARGET_FIRST_AUDIO_MS, "target, one session: 400 ms", color=report.TARGET)
    report.reference_line(
        stall_ax, TARGET_MAX_STALL_MS / 1000, "target, three sessions: 50 ms", color=report.TARGET
    )
    for ax, ylabel, title in (
        (first_ax, "first audio (ms)", "time to first audio, per session"),
        (stall_ax, "seconds", "stalls: the worst session's total, and the longest one"),
    ):
        ax.set_xticks(result["levels"])
        ax.set_xlabel("concurrent sessions")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    levels = QUICK_LEVELS if quick else LEVELS
    result: dict[str, Any] = {
        "levels": list(levels),
        "stall_floor_s": STALL_FLOOR_S,
        "transports": {transport: measure(transport, levels) for transport in TRANSPORTS},
    }
    for transport, rows in result["transports"].items():
        print(f"\n{transport}:")
        print(
            report.table(
                [
                    "sessions",
                    "first audio median / max (ms)",
                    "worst session's stalls (s)",
                    "longest stall (ms)",
                    "stalls, all sessions",
                    "sessions with a stall > 50 ms",
                    "replica: most sessions / capacity",
                ],
                [
                    (
                        row["sessions"],
                        f"{row['first_audio_ms_median']:,.0f} / {row['first_audio_ms_max']:,.0f}",
                        f"{row['worst_stall_s']:.2f}",
                        f"{row['max_stall_ms']:,.0f}",
                        row["stalls_total"],
                        row["sessions_with_stall_over_50_ms"],
                        _load(row["replica_load"]),
                    )
                    for row in rows
                ],
            )
        )
    return report.write(out, "playback", result, plot(result), quick)
