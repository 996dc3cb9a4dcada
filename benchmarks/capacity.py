"""`capacity`: how many sessions one replica keeps gap-free on this machine, measured; the figure the
deploy reads (`deploy/capacity.py`: the autoscaling target and `python -m deploy plan --users N`).

One replica (`python -m tts serve` as its own process, its WebSocket: the emulator's hop adds under a
millisecond per message, `emulator` study) is given k sessions at once, k = 1, 2, 3, ..., each a
held-out four-sentence answer sent as a voice agent does (`playback` study: one message per sentence,
a real-time listener per session). Level k holds when no listener's stalls add up to more than
GAP_FREE_STALL_MS (issue 31's acceptance: "no listener stalls more than 100 ms in all"); the capacity is
the last k that held before the first that did not. Beside it, the capacity the replica claimed on
`/ping` while it served (its own estimate from the decoder speed it measured), so the two can be
compared on any machine.

The figure is this machine's: the CPU replica here, the GPU image where `scripts/gpu-check` runs this
study with `TTS_ENGINE=torch` on CUDA. `where` says which (the engine and device from `/ping`, the
CPU model and its core count), and the deploy prints it with the plan.

Two replicas, one after the other:
1. **measured**: admission off (`TTS_CAPACITY` at its bound, so no session waits for a slot): levels
   k = 1, 2, ... until the first that is not gap-free; the capacity is the last that held. Beside it,
   what the replica's calibration claimed while it served (`/ping`'s `load.calibration.capacity`).
2. **admission**: a replica as it ships, admitting its own claim k: k + 2 sessions at once. The k
   admitted ones must play without a gap; the two after them must be told their place in line
   (`queued`), start once a slot frees, and never wait once playing (issue 31's acceptance).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx

from agent.chunker import split_sentences
from benchmarks import report
from benchmarks.container import tts_process, websocket_url
from benchmarks.playback import SESSION_TIMEOUT_S, level, playback, summarize_level, websocket_session
from benchmarks.texts import PLAYBACK_ANSWERS
from facts import DEFAULT_VOICE
from tools.tts_client import connect, speak
from tts.config import MAX_CAPACITY

GAP_FREE_STALL_MS = 100.0
MAX_LEVEL = 8
QUICK_MAX_LEVEL = 4
SETTLE_S = 1.0  # between levels: every session's audio is computed, the replica is idle again


def gap_free(row: dict[str, Any]) -> bool:
    """Every listener of the level heard its answer with at most GAP_FREE_STALL_MS of stalls in all."""
    return all(s["stall_s"] * 1000 <= GAP_FREE_STALL_MS for s in row["per_session"])


def capacity_of(rows: list[dict[str, Any]]) -> int:
    """The last level that held before the first that did not (0: not even one session)."""
    held = 0
    for row in rows:
        if not gap_free(row):
            break
        held = row["sessions"]
    return held


async def queued_session(url: str, text: str, since: float) -> dict[str, Any]:
    """`text` sentence by sentence on a fresh WebSocket: the listener's view (`playback`) and the
    places in line the session was told (`queued` messages, in order)."""
    messages = [
        {"text": sentence, "request_id": str(n), "voice": DEFAULT_VOICE}
        for n, sentence in enumerate(split_sentences(text))
    ]
    async with connect(url) as channel:
        transcript = await speak(channel, messages, SESSION_TIMEOUT_S)
    return playback(transcript.arrivals(since)) | {
        "places": [int(frame["position"]) for frame in transcript.controls("queued")]
    }


async def admission(base: str) -> dict[str, Any]:
    """k + 2 sessions at once on a replica admitting its own claim k (read from `/ping` first)."""
    async with httpx.AsyncClient(trust_env=False) as client:
        claimed = int((await client.get(f"{base}/ping", timeout=5.0)).json()["load"]["capacity"])
    url = websocket_url(base)
    await queued_session(url, PLAYBACK_ANSWERS[0], time.perf_counter())  # warm-up
    await asyncio.sleep(SETTLE_S)
    since = time.perf_counter()
    texts = [PLAYBACK_ANSWERS[n % len(PLAYBACK_ANSWERS)] for n in range(claimed + 2)]
    sessions = []
    for text in texts:  # in this order, a few ms apart: the first k are the admitted ones
        sessions.append(asyncio.create_task(queued_session(url, text, since)))
        await asyncio.sleep(0.02)
    heard = await asyncio.gather(*sessions)
    admitted, waited = heard[:claimed], heard[claimed:]
    # An admitted session closes once its last audio is in: its slot frees then (`Scheduler.closed`).
    slot_freed_ms = min(s["last_audio_at_s"] for s in admitted) * 1000
    return {
        "claimed": claimed,
        "sessions": heard,
        "admitted_worst_stall_ms": max(s["stall_s"] for s in admitted) * 1000,
        "admitted_told_to_wait": sum(bool(s["places"]) for s in admitted),
        "waiting_places": [s["places"] for s in waited],
        "waiting_worst_stall_ms": max(s["stall_s"] for s in waited) * 1000,
        "first_slot_freed_ms": round(slot_freed_ms, 1),
        "waiting_first_audio_ms": [s["first_audio_ms"] for s in waited],
        "holds": max(s["stall_s"] for s in heard) * 1000 <= GAP_FREE_STALL_MS
        and all(s["places"] for s in waited)
        and not any(s["places"] for s in admitted),
    }


async def measure(base: str, max_level: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Levels 1..max_level until the first that is not gap-free; the replica's `/ping` once idle."""
    url = websocket_url(base)

    async def speak(text: str, since: float):
        return await websocket_session(url, text, since)

    await speak(PLAYBACK_ANSWERS[0], time.perf_counter())  # warm-up: connections, caches
    rows: list[dict[str, Any]] = []
    for sessions in report.progress(range(1, max_level + 1), "sessions", total=max_level):
        heard, load = await level(speak, sessions, f"{base}/ping")
        row = summarize_level(heard) | {"replica_load": load}
        row["gap_free"] = gap_free(row)
        rows.append(row)
        if not row["gap_free"]:
            break
        await asyncio.sleep(SETTLE_S)
    async with httpx.AsyncClient(trust_env=False) as client:
        ping = (await client.get(f"{base}/ping", timeout=5.0)).json()
    return rows, ping


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (ax,) = report.figure("Capacity: each listener's stalls, k sessions at once on one replica")
    rows = result["levels"]
    for row in rows:
        totals = [s["stall_s"] * 1000 for s in row["per_session"]]
        ax.plot([row["sessions"]] * len(totals), totals, "o", color=report.OURS, alpha=0.6)
    ax.plot(
        [r["sessions"] for r in rows],
        [max(s["stall_s"] * 1000 for s in r["per_session"]) for r in rows],
        "-",
        color=report.OURS,
        label="worst listener",
    )
    report.reference_line(ax, GAP_FREE_STALL_MS, f"gap-free: {GAP_FREE_STALL_MS:.0f} ms", color=report.TARGET)
    report.reference_line(
        ax, result["capacity"] + 0.5, f"measured capacity {result['capacity']}", horizontal=False
    )
    ax.set_xticks([r["sessions"] for r in rows])
    ax.set_xlabel("concurrent sessions")
    ax.set_ylabel("stalls per listener, in all (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    with tts_process(env={"TTS_CAPACITY": str(MAX_CAPACITY)}) as base:  # nobody waits for a slot
        rows, ping = asyncio.run(measure(base, QUICK_MAX_LEVEL if quick else MAX_LEVEL))
    with tts_process() as base:  # as it ships: admits its own claim
        admitted = asyncio.run(admission(base))
    claimed = [r["replica_load"]["calibrated"] for r in rows if r["replica_load"]["calibrated"] is not None]
    result: dict[str, Any] = {
        "capacity": capacity_of(rows),
        "claimed_capacity": claimed[-1] if claimed else None,
        "admission": admitted,
        "gap_free_stall_ms": GAP_FREE_STALL_MS,
        "where": {
            "engine": ping.get("engine"),
            "device": ping.get("device"),
            "cpu": report.processor(),
            "cores": len(os.sched_getaffinity(0)),
        },
        "levels": rows,
    }
    print(
        report.table(
            [
                "sessions",
                "worst listener's stalls (ms)",
                "first audio max (ms)",
                "gap-free",
                "replica claimed",
            ],
            [
                (
                    row["sessions"],
                    f"{row['worst_stall_s'] * 1000:,.0f}",
                    f"{row['first_audio_ms_max']:,.0f}",
                    "yes" if row["gap_free"] else "no",
                    row["replica_load"]["calibrated"],
                )
                for row in rows
            ],
        )
    )
    where = result["where"]
    print(
        f"capacity: {result['capacity']} gap-free sessions per replica (the replica claimed "
        f"{result['claimed_capacity']}) on {where['engine']} / {where['device']}, "
        f"{where['cores']} cores of {where['cpu']}"
    )
    print(
        f"admission: {admitted['claimed']} + 2 sessions on a replica admitting its claim: the admitted "
        f"stalled {admitted['admitted_worst_stall_ms']:,.0f} ms at most; the others heard places "
        f"{admitted['waiting_places']}, first audio {admitted['waiting_first_audio_ms']} ms (the first slot "
        f"freed at {admitted['first_slot_freed_ms']:,.0f} ms), stalled "
        f"{admitted['waiting_worst_stall_ms']:,.0f} ms at most: {'holds' if admitted['holds'] else 'FAILS'}"
    )
    return report.write(out, "capacity", result, plot(result), quick)
