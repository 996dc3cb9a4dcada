"""The tts container and its engines, measured directly (no emulator): the library behind the
`streaming` and `gpu` studies (`engines` takes `timed_audio` from here).

- `measure_engine`: one engine in this process: model load time, real-time factor on the whole answer
  and the first sentence's synthesis time.
- `measure_server`: the container's app on loopback: first audio of the answer's first sentence vs the
  whole answer as one message (the case for incremental chunking: the answer's first audio waits for
  its first decoder window only when windowing is on, for all of its audio when it is off).
- `measure_streaming`: three servers in this process, one with the configured window plan, one on one
  lane (`window_lanes=1`), one with windowing off (`window_first_frames=0`), asked in turn for a 10-, a
  20- and a 25-word sentence; first audio, completion, and their ratio; plus the log-mel distance and
  seam-click ratio of the streamed audio against whole-segment audio of the same text
  (`tools/fidelity.py`).
- `measure_peer`: kokoro-onnx 0.6.1 (`pip install --no-deps kokoro-onnx==0.6.1`), same int8 model and
  voice pack, `Kokoro.create_stream` run to its end, alternating with our server's completion time for
  the 20-word sentence and the whole answer as one message.
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
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import uvicorn

from benchmarks import report
from benchmarks.stats import median_ratio, spread
from benchmarks.texts import ANSWER, ANSWER_FIRST_SENTENCE, SENTENCES_BY_WORDS, TEN_WORDS
from emulator.processes import child, free_port
from facts import PCM_BYTES_PER_S, SAMPLE_RATE
from tools.fidelity import mel_distance, seam_click_ratio, seam_mel_distance
from tools.tts_client import connect, is_control, speak
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines import create_engine, export_model
from tts.engines.weights import PYPI_MODEL_NAME
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
            streamed_audio = _pcm_to_float(runs["streamed"][-1].pcm)
            whole_audio = _pcm_to_float(runs["whole"][-1].pcm)
            frames = len(whole_audio) // SAMPLES_PER_FRAME
            seams = [stop * SAMPLES_PER_FRAME for _, stop in plan.windows(frames)[:-1]]
            entry = {
                "audio_s": round(len(whole_audio) / SAMPLE_RATE, 3),
                "windows": len(seams) + 1,
                "mel_distance": round(mel_distance(whole_audio, streamed_audio), 3),
                "seam_mel_distance": round(seam_mel_distance(whole_audio, streamed_audio, seams), 3),
                "seam_click_ratio": round(seam_click_ratio(streamed_audio, seams), 2),
                "seam_click_ratio_whole": round(seam_click_ratio(whole_audio, seams), 2),
            }
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
                entry[f"complete_streamed_over_{baseline}"] = median_ratio(
                    complete["streamed"], complete[baseline]
                )
            result[f"{words}_words"] = entry
    return result


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
