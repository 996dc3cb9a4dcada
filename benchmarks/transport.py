"""`python -m tts.bench`: model load time, real-time factor, and time to first audio byte over the
container's WebSocket for the first sentence alone vs the whole four-sentence answer as one message.

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
from pathlib import Path

import uvicorn
import websockets

from tts.config import SAMPLE_RATE, TTSConfig
from tts.engine import KokoroEngine
from tts.server import create_app

ANSWER = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like me to "
    "do that now?"
)
FIRST_SENTENCE = ANSWER.split(". ")[0] + "."


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


def _measure_engine(trials: int) -> dict[str, object]:
    config = TTSConfig.from_env()
    engine = KokoroEngine(config)
    engine.warm_up(config.voice)
    (tokens,) = engine.segments(ANSWER, config.lang)
    rtfs = []
    for _ in range(trials):
        started = time.perf_counter()
        audio = engine.synthesize(tokens, config.voice, 1.0)
        rtfs.append((time.perf_counter() - started) / (len(audio) / SAMPLE_RATE))
    return {
        "load_s": round(engine.load_seconds, 3),
        "provider": engine.provider,
        "phoneme_tokens": len(tokens),
        "audio_s": round(len(audio) / SAMPLE_RATE, 3),
        "rtf": _summary(rtfs),
    }


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tts.bench", description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("out/tts-bench.json"))
    args = parser.parse_args(argv)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "text": {"first_sentence": FIRST_SENTENCE, "whole_answer_chars": len(ANSWER)},
        "trials": args.trials,
        "engine": _measure_engine(args.trials),
        "server": _measure_server(args.trials),
    }
    engine, server = result["engine"], result["server"]
    print(f"model load           {engine['load_s']:.2f} s ({engine['provider']})")
    print(
        f"real-time factor     {engine['rtf']['median']:.2f} (median of {args.trials}, "
        f"{engine['audio_s']:.1f} s of audio, {engine['phoneme_tokens']} phoneme tokens)"
    )
    print(f"server ready         {server['server_ready_s']:.2f} s after start (model load + warm-up)")
    print(
        f"first audio byte     first sentence {server['ttfa_first_sentence_s']['median']:.2f} s | "
        f"whole answer as one message {server['ttfa_whole_answer_s']['median']:.2f} s "
        f"({server['whole_over_first_ratio']:.1f}x later)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
