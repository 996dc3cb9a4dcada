"""`python -m benchmarks.gpu` (what scripts/gpu-check runs on an NVIDIA machine): per engine (onnx
and torch, side by side), model load time, real-time factor and time to the first sentence's audio;
then, for the configured engine (`TTS_ENGINE`), time to first audio byte over the container's WebSocket
for the first sentence alone vs the whole four-sentence answer as one message. `--sessions 1,4,16` adds
the concurrency study: server-side first audio for a 10-word sentence and the aggregate real-time factor
with that many concurrent sessions.

The comparison is the case for incremental chunking: a message is one forward pass (up to 510 phoneme
tokens), so its first audio byte waits for all of its audio. Trials alternate between the two cases so
that machine noise hits both alike; medians are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import uvicorn
import websockets

from tts.config import SAMPLE_RATE, TTSConfig
from tts.server import create_app
from tts.synthesis import create_engine

ANSWER = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like me to "
    "do that now?"
)
FIRST_SENTENCE = ANSWER.split(". ")[0] + "."
TEN_WORDS = "It shipped yesterday and should arrive here on Thursday morning."


@contextlib.contextmanager
def _serving(config: TTSConfig) -> Iterator[tuple[str, float]]:
    """The container's app on a free loopback port in a thread; yields its WebSocket URL and the
    seconds from start to ready (model load + warm-up)."""
    app = create_app(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="websockets-sansio"))
    started = time.perf_counter()
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    runtime = app.state.runtime
    while not runtime.ready.is_set():
        if runtime.load_error or not thread.is_alive():
            raise RuntimeError(f"tts server did not become ready: {runtime.load_error}")
        time.sleep(0.01)
    try:
        yield (
            f"ws://127.0.0.1:{sock.getsockname()[1]}/invocations-bidirectional-stream",
            time.perf_counter() - started,
        )
    finally:
        server.should_exit = True
        thread.join(30)


async def _first_audio(url: str, text: str) -> tuple[float, float]:
    """Seconds from sending `text` to its first binary frame, and to `synthesis_complete`."""
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(json.dumps({"text": text}))
        first = None
        while True:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                first = first or time.perf_counter() - started
            elif json.loads(frame)["type"] == "synthesis_complete":
                return first or float("nan"), time.perf_counter() - started


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def measure_engine(config: TTSConfig, trials: int) -> dict[str, object]:
    """One engine: load time, real-time factor on the whole answer, and the first sentence's audio time."""
    engine = create_engine(config)
    engine.warm_up(config.voice)
    (tokens,) = engine.segments(ANSWER, config.lang)
    (first_tokens,) = engine.segments(FIRST_SENTENCE, config.lang)
    rtfs, firsts = [], []
    for _ in range(trials):
        started = time.perf_counter()
        engine.synthesize(first_tokens, config.voice, 1.0)
        firsts.append(time.perf_counter() - started)
        started = time.perf_counter()
        audio = engine.synthesize(tokens, config.voice, 1.0)
        rtfs.append((time.perf_counter() - started) / (len(audio) / SAMPLE_RATE))
    return {
        "engine": engine.name,
        "device": engine.device,
        "load_s": round(engine.load_seconds, 3),
        "phoneme_tokens": len(tokens),
        "audio_s": round(len(audio) / SAMPLE_RATE, 3),
        "rtf": _summary(rtfs),
        "first_sentence_audio_s": _summary(firsts),
    }


async def _session(url: str, text: str, count: int) -> tuple[float, float]:
    """`count` requests on one session: seconds to the first binary frame, and seconds of audio received."""
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        for n in range(count):
            await ws.send(json.dumps({"text": text, "request_id": str(n)}))
        first, audio_s, done = None, 0.0, 0
        while done < count:
            frame = await ws.recv()
            if isinstance(frame, bytes):
                first = first or time.perf_counter() - started
            elif (message := json.loads(frame))["type"] == "synthesis_complete":
                audio_s += message["duration_s"]
                done += 1
        return first or float("nan"), audio_s


async def _concurrent(url: str, sessions: int, requests: int) -> dict[str, object]:
    started = time.perf_counter()
    results = await asyncio.gather(*(_session(url, TEN_WORDS, requests) for _ in range(sessions)))
    wall = time.perf_counter() - started
    audio_s = sum(audio for _, audio in results)
    return {
        "sessions": sessions,
        "first_audio_s": _summary([first for first, _ in results]),
        "audio_s": round(audio_s, 3),
        "wall_s": round(wall, 3),
        "aggregate_rtf": round(wall / audio_s, 4),
    }


def measure_sessions(config: TTSConfig, counts: list[int], requests: int = 3) -> list[dict[str, object]]:
    """The container on loopback: a 10-word sentence, `requests` times per session, `n` sessions at once."""
    with _serving(config) as (url, _):
        single = [asyncio.run(_first_audio(url, TEN_WORDS))[0] for _ in range(3)]
        rows = [asyncio.run(_concurrent(url, n, requests)) for n in counts]
    rows[0]["server_first_audio_10_words_s"] = _summary(single)
    return rows


def _measure_server(trials: int) -> dict[str, object]:
    with _serving(TTSConfig.from_env()) as (url, ready_s):
        first, whole = [], []
        for _ in range(trials):
            first.append(asyncio.run(_first_audio(url, FIRST_SENTENCE)))
            whole.append(asyncio.run(_first_audio(url, ANSWER)))
    first_ttfa = statistics.median(t for t, _ in first)
    whole_ttfa = statistics.median(t for t, _ in whole)
    return {
        "server_ready_s": round(ready_s, 3),
        "ttfa_first_sentence_s": _summary([t for t, _ in first]),
        "ttfa_whole_answer_s": _summary([t for t, _ in whole]),
        "complete_whole_answer_s": _summary([t for _, t in whole]),
        "whole_over_first_ratio": round(whole_ttfa / first_ttfa, 2),
    }


def print_engines(rows: list[dict[str, object]], trials: int) -> None:
    """The engines side by side: load, real-time factor, first sentence's audio."""
    print(f"{'engine':<8} {'device':<22} {'load s':>7} {'RTF':>6} {'first audio s':>14}")
    for row in rows:
        print(
            f"{row['engine']:<8} {row['device']:<22} {row['load_s']:>7.2f} {row['rtf']['median']:>6.2f} "
            f"{row['first_sentence_audio_s']['median']:>14.2f}"
        )
    print(f"(medians of {trials}; RTF on the whole answer, {rows[0]['audio_s']:.1f} s of audio)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--engines", default="onnx,torch", help="engines to compare (default onnx,torch)")
    parser.add_argument("--sessions", help="concurrency study, e.g. 1,4,16 (configured engine)")
    parser.add_argument("--no-server", action="store_true", help="skip the WebSocket first-audio study")
    parser.add_argument("--out", type=Path, default=Path("out/gpu-bench.json"))
    args = parser.parse_args(argv)
    config = TTSConfig.from_env()
    engines = [
        measure_engine(replace(config, engine=name), args.trials) for name in args.engines.split(",") if name
    ]
    result: dict[str, object] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "text": {"first_sentence": FIRST_SENTENCE, "whole_answer_chars": len(ANSWER), "ten_words": TEN_WORDS},
        "trials": args.trials,
        "engines": engines,
    }
    if engines:
        print_engines(engines, args.trials)
    if not args.no_server:
        server = result["server"] = _measure_server(args.trials)
        print(f"server ({config.engine} engine) ready {server['server_ready_s']:.2f} s after start")
        print(
            f"first audio byte     first sentence {server['ttfa_first_sentence_s']['median']:.2f} s | "
            f"whole answer as one message {server['ttfa_whole_answer_s']['median']:.2f} s "
            f"({server['whole_over_first_ratio']:.1f}x later)"
        )
    if args.sessions:
        rows = result["sessions"] = measure_sessions(config, [int(n) for n in args.sessions.split(",")])
        alone = rows[0]["server_first_audio_10_words_s"]["median"]
        print(f"10-word sentence, first audio alone: {alone:.3f} s")
        for row in rows:
            print(
                f"{row['sessions']:>3} sessions: aggregate RTF {row['aggregate_rtf']:.3f}, "
                f"first audio median {row['first_audio_s']['median']:.3f} s"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
