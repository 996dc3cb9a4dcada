"""The tts container and its engines, measured directly (no emulator): the container as a process
(`tts_process`) or in a thread (`serving`), one text's timed audio (`timed_audio`), and the measurements
behind the `gpu` study (`streaming`, `engines` and others take the first three from here).

- `measure_engine`: one engine in this process: model load time, real-time factor on the whole answer
  and the first sentence's synthesis time.
- `measure_server`: the container's app on loopback: first audio of the answer's first sentence vs the
  whole answer as one message (the case for incremental chunking: the answer's first audio waits for
  its first decoder window only when windowing is on, for all of its audio when it is off).
- `measure_sessions`: server-side first audio for a 10-word sentence and the aggregate real-time factor
  with that many concurrent sessions.
Trials alternate between the cases so that machine noise hits them alike; medians are reported
(`benchmarks/stats.py`), and each measurement has its table (`benchmarks/report.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import uvicorn

from benchmarks import report
from benchmarks.stats import spread
from benchmarks.texts import ANSWER, ANSWER_FIRST_SENTENCE, TEN_WORDS
from emulator.processes import child, free_port
from facts import PCM_BYTES_PER_S, SAMPLE_RATE
from tools.tts_client import connect, is_control, speak
from tts.config import TTSConfig
from tts.engines import create_engine
from tts.scheduling.plan import WindowPlan
from tts.serving.app import create_app


class Served(NamedTuple):
    url: str  # the WebSocket
    ready_s: float  # from start to ready (model load + warm-up)
    plan: WindowPlan  # the engine's window plan, lanes resolved


@contextlib.contextmanager
def tts_process(env: dict[str, str] | None = None, timeout_s: float = 300) -> Iterator[str]:
    """`python -m tts serve` as its own process on a free port, ready (`/ping` 200), until the block
    ends: its base URL (http://127.0.0.1:PORT)."""
    port = free_port()
    argv = [sys.executable, "-m", "tts", "serve", "--port", str(port), "--log-level", "warning"]
    with child(argv, env=env, ready_url=f"http://127.0.0.1:{port}/ping", timeout_s=timeout_s):
        yield f"http://127.0.0.1:{port}"


def websocket_url(base: str) -> str:
    return base.replace("http://", "ws://", 1) + "/invocations-bidirectional-stream"


@contextlib.contextmanager
def serving(config: TTSConfig) -> Iterator[Served]:
    """The container's app on a free loopback port in a thread."""
    app = create_app(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="websockets-sansio"))
    started = time.perf_counter()
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    host = app.state.model_host
    while not host.ready.is_set():
        if host.load_error or not thread.is_alive():
            raise RuntimeError(f"tts server did not become ready: {host.load_error}")
        time.sleep(0.01)
    try:
        yield Served(
            f"ws://127.0.0.1:{sock.getsockname()[1]}/invocations-bidirectional-stream",
            time.perf_counter() - started,
            host.scheduler.plan,
        )
    finally:
        server.should_exit = True
        thread.join(30)


class TimedAudio(NamedTuple):
    first_s: float  # the first binary frame
    complete_s: float  # `synthesis_complete`
    heard_s: float  # when a listener who plays each frame as it arrives hears the last sample
    pcm: bytes

    @property
    def stalls_s(self) -> float:
        """Silence inside the speech: waits for audio not yet computed, after the first frame."""
        return self.heard_s - self.first_s - len(self.pcm) / PCM_BYTES_PER_S


async def timed_audio(url: str, text: str) -> TimedAudio:
    """`text` on a fresh WebSocket (PCM): the times above and the audio. A container error raises; a
    silent container fails after 300 s."""
    async with connect(url) as channel:
        started = time.perf_counter()
        transcript = await speak(channel, [{"text": text}], timeout_s=300)
    arrivals = transcript.arrivals(started)
    heard = 0.0
    for arrival in arrivals:
        heard = max(heard, arrival.at_s) + arrival.audio_s
    complete = transcript.first(is_control("synthesis_complete")).at_s - started
    first = arrivals[0].at_s if arrivals else float("nan")
    return TimedAudio(first, complete, heard, transcript.pcm())


def measure_engine(config: TTSConfig, trials: int) -> dict[str, Any]:
    """One engine: load time, real-time factor on the whole answer, and the first sentence's audio time."""
    engine = create_engine(config)
    engine.warm_up(config.voice)
    (tokens,) = engine.segments(ANSWER, config.lang)
    (first_tokens,) = engine.segments(ANSWER_FIRST_SENTENCE, config.lang)
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
        "rtf": spread(rtfs),
        "first_sentence_audio_s": spread(firsts),
    }


def engines_table(rows: list[dict[str, Any]], trials: int) -> str:
    """The engines side by side: load, real-time factor, first sentence's audio."""
    lines = report.table(
        ["engine", "device", "load (s)", "RTF", "first audio (s)"],
        [
            (
                row["engine"],
                row["device"],
                f"{row['load_s']:.2f}",
                f"{row['rtf']['median']:.2f}",
                f"{row['first_sentence_audio_s']['median']:.2f}",
            )
            for row in rows
        ],
    )
    return f"{lines}\n(medians of {trials}; RTF on the whole answer, {rows[0]['audio_s']:.1f} s of audio)"


async def _session(url: str, text: str, count: int) -> tuple[float, float]:
    """`count` requests on one session: seconds to the first binary frame, and seconds of audio received."""
    async with connect(url) as channel:
        started = time.perf_counter()
        messages = [{"text": text, "request_id": str(n)} for n in range(count)]
        transcript = await speak(channel, messages, timeout_s=600)
    arrivals = transcript.arrivals(started)
    audio_s = sum(message["duration_s"] for message in transcript.controls("synthesis_complete"))
    return (arrivals[0].at_s if arrivals else float("nan")), audio_s


async def _concurrent(url: str, sessions: int, requests: int) -> dict[str, Any]:
    started = time.perf_counter()
    results = await asyncio.gather(*(_session(url, TEN_WORDS, requests) for _ in range(sessions)))
    wall = time.perf_counter() - started
    audio_s = sum(audio for _, audio in results)
    return {
        "sessions": sessions,
        "first_audio_s": spread([first for first, _ in results]),
        "audio_s": round(audio_s, 3),
        "wall_s": round(wall, 3),
        "aggregate_rtf": round(wall / audio_s, 4),
    }


def measure_sessions(config: TTSConfig, counts: list[int], requests: int = 3) -> list[dict[str, Any]]:
    """The container on loopback: a 10-word sentence, `requests` times per session, `n` sessions at once."""
    with serving(config) as served:
        single = [asyncio.run(timed_audio(served.url, TEN_WORDS)).first_s for _ in range(3)]
        rows = [asyncio.run(_concurrent(served.url, n, requests)) for n in counts]
    rows[0]["server_first_audio_10_words_s"] = spread(single)
    return rows


def sessions_table(rows: list[dict[str, Any]]) -> str:
    alone = rows[0]["server_first_audio_10_words_s"]["median"]
    lines = report.table(
        ["sessions", "aggregate RTF", "first audio, median (s)"],
        [
            (row["sessions"], f"{row['aggregate_rtf']:.3f}", f"{row['first_audio_s']['median']:.3f}")
            for row in rows
        ],
    )
    return f"10-word sentence, first audio alone: {alone:.3f} s\n{lines}"


def measure_server(config: TTSConfig, trials: int) -> dict[str, Any]:
    """The container's first audio for the answer's first sentence and for the whole answer as one
    message, alternating."""
    with serving(config) as served:
        first, whole = [], []
        for _ in range(trials):
            first.append(asyncio.run(timed_audio(served.url, ANSWER_FIRST_SENTENCE)))
            whole.append(asyncio.run(timed_audio(served.url, ANSWER)))
    return {
        "server_ready_s": round(served.ready_s, 3),
        "ttfa_first_sentence_s": spread([t.first_s for t in first]),
        "ttfa_whole_answer_s": spread([t.first_s for t in whole]),
        "complete_whole_answer_s": spread([t.complete_s for t in whole]),
        "whole_over_first_ratio": round(
            statistics.median(t.first_s for t in whole) / statistics.median(t.first_s for t in first), 2
        ),
    }


def server_table(server: dict[str, Any]) -> str:
    return report.table(
        ["ready (s)", "first audio: first sentence (s)", "whole answer as one message (s)", "whole / first"],
        [
            (
                f"{server['server_ready_s']:.2f}",
                f"{server['ttfa_first_sentence_s']['median']:.2f}",
                f"{server['ttfa_whole_answer_s']['median']:.2f}",
                f"{server['whole_over_first_ratio']:.1f}x",
            )
        ],
    )
