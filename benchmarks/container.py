"""`python -m benchmarks.container`: the tts container and its engines, measured directly (no
emulator); `scripts/gpu-check` runs it on an NVIDIA machine.

- Engines (`--engines onnx,torch`): per engine, side by side, model load time, real-time factor and
  time to the first sentence's audio.
- Sentence vs answer is the case for incremental chunking: the answer's first audio waits for its
  first decoder window only when windowing is on, for all of its audio when it is off.
- Streamed vs whole (`--streaming`): two servers in this process, one with the configured window plan,
  one with windowing off (`TTS_WINDOW_FIRST_FRAMES=0`), asked in turn for a 10-, a 20- and a 25-word
  sentence; first audio, completion, and their ratio; plus the log-mel distance and seam-click ratio of
  the streamed audio against whole-segment audio of the same text (`tts/fidelity.py`).
- Peer (`--peer`): kokoro-onnx 0.6.1 (`pip install --no-deps kokoro-onnx==0.6.1`), same int8 model and
  voice pack, `Kokoro.create_stream` run to its end, alternating with our server's completion time for
  the 20-word sentence and the whole answer as one message.
- Sessions (`--sessions 1,4,16`): server-side first audio for a 10-word sentence and the aggregate
  real-time factor with that many concurrent sessions (the GPU benchmark).
Trials alternate between the cases so that machine noise hits them alike; medians are reported.
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
from typing import NamedTuple

import numpy as np
import uvicorn
import websockets

from tts.assets import PYPI_MODEL_NAME, export_model_dir
from tts.config import SAMPLE_RATE, TTSConfig
from tts.engines import create_engine
from tts.fidelity import mel_distance, seam_click_ratio, seam_mel_distance
from tts.server import create_app
from tts.windows import SAMPLES_PER_FRAME, WindowPlan

ANSWER = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like me to "
    "do that now?"
)
FIRST_SENTENCE = ANSWER.split(". ")[0] + "."
BYTES_PER_SECOND = SAMPLE_RATE * 2  # s16le mono
TEN_WORDS = "It shipped yesterday and should arrive here on Thursday morning."
SENTENCES_BY_WORDS = {
    10: "Thanks for waiting, I found your order and it shipped.",
    20: "It shipped yesterday from our Denver warehouse and should arrive on Thursday, so you will have "
    "it before the weekend.",
    25: "If you need it sooner, I can upgrade the shipping at no cost, and the driver will call you an "
    "hour before arriving at your door.",
}


class Served(NamedTuple):
    url: str  # the WebSocket
    ready_s: float  # from start to ready (model load + warm-up)
    plan: WindowPlan  # the engine's window plan, lanes resolved


@contextlib.contextmanager
def _serving(config: TTSConfig) -> Iterator[Served]:
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
            host.engine.window_plan,
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
        return self.heard_s - self.first_s - len(self.pcm) / BYTES_PER_SECOND


async def timed_audio(url: str, text: str) -> TimedAudio:
    """`text` on a fresh WebSocket (PCM): the times above and the audio. A container error raises; a
    silent container fails after 300 s."""
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(json.dumps({"text": text}))
        first, heard, pcm = None, 0.0, bytearray()
        async with asyncio.timeout(300):
            while True:
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    arrived = time.perf_counter() - started
                    first = first or arrived
                    heard = max(heard, arrived) + len(frame) / BYTES_PER_SECOND
                    pcm += frame
                    continue
                message = json.loads(frame)
                if message["type"] == "synthesis_complete":
                    return TimedAudio(first or float("nan"), time.perf_counter() - started, heard, bytes(pcm))
                if message["type"] == "error":
                    raise RuntimeError(f"{message['code']}: {message['message']}")


async def _first_audio(url: str, text: str) -> tuple[float, float]:
    timed = await timed_audio(url, text)
    return timed.first_s, timed.complete_s


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
    with _serving(config) as (url, *_):
        single = [asyncio.run(_first_audio(url, TEN_WORDS))[0] for _ in range(3)]
        rows = [asyncio.run(_concurrent(url, n, requests)) for n in counts]
    rows[0]["server_first_audio_10_words_s"] = _summary(single)
    return rows


def _measure_server(trials: int) -> dict[str, object]:
    with _serving(TTSConfig.from_env()) as (url, ready_s, _):
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


def _pcm_to_float(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0


def measure_streaming(trials: int) -> dict[str, object]:
    """Streamed (the configured plan), streamed on one lane, and whole-segment decoding, side by side,
    alternating, through the WebSocket."""
    config = TTSConfig.from_env()
    configs = {
        "streamed": config,
        "one_lane": replace(config, window_lanes=1),
        "whole": replace(config, window_first_frames=0),
    }
    result: dict[str, object] = {}
    with contextlib.ExitStack() as stack:
        served = {mode: stack.enter_context(_serving(c)) for mode, c in configs.items()}
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
                entry[f"{mode}_first_audio_s"] = _summary([t.first_s for t in values])
                entry[f"{mode}_complete_s"] = _summary([t.complete_s for t in values])
                entry[f"{mode}_heard_s"] = _summary([t.heard_s for t in values])
                entry[f"{mode}_stalls_s"] = _summary([t.stalls_s for t in values])
                entry[f"{mode}_first_over_complete"] = round(
                    statistics.median(t.first_s / t.complete_s for t in values), 3
                )
            complete = {mode: [t.complete_s for t in values] for mode, values in runs.items()}
            for baseline in ("whole", "one_lane"):
                entry[f"complete_streamed_over_{baseline}"] = _median_ratio(
                    complete["streamed"], complete[baseline]
                )
            result[f"{words}_words"] = entry
    return result


def _median_ratio(ours: list[float], theirs: list[float]) -> float:
    """The median of trial-by-trial ratios (trials alternate, so each pair shares the machine's noise)."""
    return round(statistics.median(o / t for o, t in zip(ours, theirs, strict=True)), 3)


def measure_peer(trials: int) -> dict[str, object]:
    """Whole-text time: our server (streamed, through the WebSocket) vs kokoro-onnx `create_stream`."""
    try:
        from kokoro_onnx import Kokoro
    except ImportError:
        return {"skipped": "kokoro-onnx is not installed (pip install --no-deps kokoro-onnx==0.6.1)"}
    import tempfile

    config = TTSConfig.from_env()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = export_model_dir(Path(tmp), config.cache_dir)
        peer = Kokoro(str(model_dir / PYPI_MODEL_NAME), str(model_dir / "voices.npz"))

        async def peer_run(text: str) -> float:
            started = time.perf_counter()
            async for _ in peer.create_stream(text, voice=config.voice, speed=1.0, lang=config.lang):
                pass
            return time.perf_counter() - started

        asyncio.run(peer_run(FIRST_SENTENCE))
        result: dict[str, object] = {}
        one_lane = replace(config, window_lanes=1)
        with _serving(config) as ours, _serving(one_lane) as ours_one_lane:
            for name, text in (("20_words", SENTENCES_BY_WORDS[20]), ("answer", ANSWER)):
                runs: dict[str, list[float]] = {"ours": [], "ours_one_lane": [], "kokoro_onnx": []}
                for _ in range(trials):
                    runs["ours"].append(asyncio.run(timed_audio(ours.url, text)).complete_s)
                    runs["ours_one_lane"].append(asyncio.run(timed_audio(ours_one_lane.url, text)).complete_s)
                    runs["kokoro_onnx"].append(asyncio.run(peer_run(text)))
                result[name] = {
                    "ours_complete_s": _summary(runs["ours"]),
                    "ours_one_lane_complete_s": _summary(runs["ours_one_lane"]),
                    "kokoro_onnx_s": _summary(runs["kokoro_onnx"]),
                    "ours_over_kokoro_onnx": _median_ratio(runs["ours"], runs["kokoro_onnx"]),
                    "ours_one_lane_over_kokoro_onnx": _median_ratio(
                        runs["ours_one_lane"], runs["kokoro_onnx"]
                    ),
                }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.container", description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--engines", default="onnx,torch", help="engines to compare (default onnx,torch)")
    parser.add_argument("--sessions", help="concurrency study, e.g. 1,4,16 (configured engine)")
    parser.add_argument("--streaming", action="store_true", help="streamed vs whole-segment decoding")
    parser.add_argument("--peer", action="store_true", help="whole-text time vs kokoro-onnx")
    parser.add_argument("--only", action="store_true", help="skip the engine and sentence/answer runs")
    parser.add_argument("--out", type=Path, default=Path("out/container-bench.json"))
    args = parser.parse_args(argv)
    config = TTSConfig.from_env()
    engines = (
        []
        if args.only
        else [
            measure_engine(replace(config, engine=name), args.trials)
            for name in args.engines.split(",")
            if name
        ]
    )
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
    if args.streaming:
        result["streaming"] = measure_streaming(args.trials)
        print_streaming(result["streaming"])
    if args.peer:
        result["peer"] = measure_peer(args.trials)
        print_peer(result["peer"])
    if not args.only:
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


def print_streaming(streaming: dict) -> None:
    for key, entry in streaming.items():
        if not key.endswith("_words"):
            continue

        def median(mode: str, measure: str, entry: dict = entry) -> float:
            return entry[f"{mode}_{measure}_s"]["median"]

        print(
            f"{key:>9}: first audio streamed {median('streamed', 'first_audio'):.3f} s vs whole "
            f"{median('whole', 'first_audio'):.3f} s; complete {median('streamed', 'complete'):.2f} vs "
            f"one lane {median('one_lane', 'complete'):.2f} (x{entry['complete_streamed_over_one_lane']}) vs "
            f"whole {median('whole', 'complete'):.2f} s (x{entry['complete_streamed_over_whole']}); "
            f"first/complete {entry['streamed_first_over_complete']:.2f}; heard by "
            f"{median('streamed', 'heard'):.2f} vs one lane {median('one_lane', 'heard'):.2f} vs whole "
            f"{median('whole', 'heard'):.2f} s (stalls {median('streamed', 'stalls'):.2f} vs one lane "
            f"{median('one_lane', 'stalls'):.2f} s); mel {entry['mel_distance']} "
            f"(at the seams {entry['seam_mel_distance']}), seam clicks {entry['seam_click_ratio']} "
            f"(whole at the same places {entry['seam_click_ratio_whole']})"
        )


def print_peer(peer: dict) -> None:
    if "skipped" in peer:
        print(f"peer: {peer['skipped']}")
        return
    for name, entry in peer.items():
        print(
            f"{name:>9}: ours {entry['ours_complete_s']['median']:.2f} s (one lane "
            f"{entry['ours_one_lane_complete_s']['median']:.2f} s) vs kokoro-onnx "
            f"{entry['kokoro_onnx_s']['median']:.2f} s (ratio {entry['ours_over_kokoro_onnx']}, one lane "
            f"{entry['ours_one_lane_over_kokoro_onnx']})"
        )


if __name__ == "__main__":
    sys.exit(main())
