"""`batching`: the torch engine's decoder windows of many sessions in one forward pass against one after
another, on the device it runs on (CUDA where torch sees it). What `scripts/gpu-check --bundle DIR`
carries to a lent GPU machine (`DIR/run`, `benchmarks/gpu_bundle.py`), and `python -m benchmarks
batching` runs here.

It measures, in one run:
- equivalence: EQUIVALENCE_SESSIONS windows of different sessions (texts, voices, offsets, lengths)
  decoded in one batch against each alone: every window within PEAK_TOLERANCE of full scale and its
  difference's RMS within RMS_TOLERANCE; on a GPU also the GPU's audio against the CPU's for the same
  windows and weights (log-spectral distance, since the GPU's TF32 convolutions round differently);
- decode throughput: the fixed plan's windows of many segments, batched against one by one;
- first audio of a 20-word sentence at one session, through the scheduler (text side, first window);
- sessions at once, batched (the engine's TTS_BATCH) and unbatched (TTS_BATCH=1), through the
  scheduler, which hands the engine the due windows of several sessions in one `decode_batch`
  (`tts/scheduling/picking.py`): audio seconds per second, first audio (median, p95), how long a
  listener that starts at its first audio would wait for the rest (stalls), the forward passes and
  how many of them several sessions shared, and the capacity the scheduler claimed (its calibration,
  batched passes counted).
Its summary line says whether the issue's targets hold: TARGETS.

Weights: in the bundle, hexgrad's architecture with seeded random weights (`bundle_assets.py`; speed does
not depend on the values, and correctness is judged batched against alone and GPU against CPU on the
same weights); here, the real ones (the export of the shipped int8 model). `weights` in the JSON says
which.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.texts import SENTENCES_BY_WORDS
from tts.config import TTSConfig
from tts.engines.base import Features, SpeechEngine, Window
from tts.engines.decode import FRAME_S
from tts.scheduling.calibration import Calibration, calibrate
from tts.scheduling.plan import WindowPlan
from tts.scheduling.scheduler import Scheduler
from tts.wire.protocol import Synthesize

EQUIVALENCE_SESSIONS = 16
# A batched window against the same window alone, same device: float rounding of batched kernels, made
# larger where the instance norms divide by a small variance (the silence a segment starts with):
# measured on 2 CPU cores, at most 5.6e-4 of full scale and RMS 4e-5 over 16 windows.
PEAK_TOLERANCE = 2e-3
RMS_TOLERANCE = 2e-4
SESSIONS = [1, 4, 16, 32, 64]
SENTENCES_PER_SESSION = 2
# --quick (CI's dry run of the bundle, on 2 CPU cores): two sessions, a two-word sentence each, short
# windows, no calibration (the scheduler's fixed plan: without a measured pass it forms no batches,
# which on a CPU's costs would seldom pay anyway) and no warm-up: every path runs, in seconds.
QUICK_SESSIONS = [1, 2]
QUICK_TEXT = "Hello there."
QUICK_LENGTHS = [12, 20, 16, 24]
ARRIVAL_SPREAD_S = 1.0  # sessions arrive evenly over this long (all at once is no listener's day)
FIRST_AUDIO_TEXT = SENTENCES_BY_WORDS[20]
SESSION_TEXTS = [SENTENCES_BY_WORDS[10], SENTENCES_BY_WORDS[20], SENTENCES_BY_WORDS[25]]
SPEAKERS = ["af_heart", "am_adam"]  # the sessions take turns with these voices (English, as the texts)
TARGETS = {"first_audio_20_words_ms": 30.0, "audio_s_per_s_at_32": 700.0, "p95_first_audio_ms_at_32": 150.0}


def windows_of(features: list[Features], count: int, lengths: list[int]) -> list[Window]:
    """`count` windows over `features` (segments of different sessions), of `lengths` frames in turn,
    at offsets that differ from one to the next (a segment's start, its middle, its end)."""
    windows = []
    for index in range(count):
        segment = features[index % len(features)]
        length = min(lengths[index % len(lengths)], segment.frames)
        start = (index * 7) % max(1, segment.frames - length + 1)
        windows.append(Window(segment, start, start + length))
    return windows


def equivalence(engine: SpeechEngine, windows: list[Window]) -> dict[str, Any]:
    """Each window batched against alone: the largest difference and its RMS, over all windows."""
    batched = engine.decode_batch(windows)
    peaks, rms = [], []
    for window, together in zip(windows, batched, strict=True):
        alone = engine.decode(window.features, window.start, window.stop)
        difference = np.asarray(together) - alone
        peaks.append(float(np.abs(difference).max()))
        rms.append(float(np.sqrt(np.mean(difference**2))))
    return {
        "windows": len(windows),
        "max_abs": max(peaks),
        "max_rms": max(rms),
        "peak_tolerance": PEAK_TOLERANCE,
        "rms_tolerance": RMS_TOLERANCE,
        "within": max(peaks) <= PEAK_TOLERANCE and max(rms) <= RMS_TOLERANCE,
        "finite": all(np.isfinite(np.asarray(a)).all() for a in batched),
    }


def throughput(engine: SpeechEngine, windows: list[Window], rounds: int) -> dict[str, Any]:
    """Audio seconds decoded per second: `windows` in batches (the engine's) and one by one."""

    def timed(batched: bool) -> float:
        started = time.perf_counter()
        for _ in range(rounds):
            if batched:
                engine.decode_batch(windows)
            else:
                for window in windows:
                    engine.decode(window.features, window.start, window.stop)
        return time.perf_counter() - started

    timed(True)  # warm-up: the batch shapes (and, on CUDA, their graphs)
    audio_s = rounds * sum(window.frames for window in windows) * FRAME_S
    one_by_one, batched = timed(False), timed(True)
    return {
        "windows": len(windows),
        "batch": engine.batch,
        "one_by_one_audio_s_per_s": round(audio_s / one_by_one, 1),
        "batched_audio_s_per_s": round(audio_s / batched, 1),
        "speedup": round(one_by_one / batched, 2),
    }


def _stall_s(arrivals: list[tuple[float, float]]) -> float:
    """Seconds a listener who starts at the first chunk waits later on: chunks as (arrival, seconds)."""
    if not arrivals:
        return 0.0
    clock, stalled = arrivals[0][0], 0.0
    for arrived, seconds in arrivals:
        if arrived > clock:
            stalled += arrived - clock
            clock = arrived
        clock += seconds
    return stalled


async def _session(scheduler: Scheduler, owner: int, texts: list[str], voice: str, delay: float) -> dict:
    await asyncio.sleep(delay)
    submitted = time.perf_counter()
    arrivals: list[tuple[float, float]] = []
    for number, text in enumerate(texts):
        request = Synthesize(text, voice, 1.0, "pcm", "en-us", f"{owner}-{number}")
        job = scheduler.submit(owner, request)
        while (item := await job.audio.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, bytes):
                arrivals.append((time.perf_counter(), len(item) / 2 / 24000))
    scheduler.closed(owner)
    return {
        "first_audio_s": arrivals[0][0] - submitted,
        "audio_s": sum(seconds for _, seconds in arrivals),
        "stall_s": _stall_s(arrivals),
    }


@contextlib.contextmanager
def _passes(engine: SpeechEngine) -> Iterator[list[int]]:
    """The engine's `decode_batch` calls while the block runs: per call, the sessions (run flags) its
    windows came from."""
    passes: list[int] = []
    decode_batch = engine.decode_batch

    def counted(windows):
        passes.append(len({id(window.run_flag) for window in windows}))
        return decode_batch(windows)

    engine.decode_batch = counted  # type: ignore[method-assign]
    try:
        yield passes
    finally:
        del engine.decode_batch


async def _sessions(
    engine: SpeechEngine, config: TTSConfig, calibration: Calibration | None, count: int, texts: list[str]
) -> dict[str, Any]:
    """`count` sessions arriving over ARRIVAL_SPREAD_S, each speaking SENTENCES_PER_SESSION of `texts`
    (one after another, as an agent's answer comes; one where `texts` is one), all admitted."""
    plan = WindowPlan.from_config(config, engine.lanes)
    scheduler = Scheduler(engine, plan, _fresh(calibration), capacity=count)
    scheduler.start()
    started = time.perf_counter()
    with _passes(engine) as passes:
        results = await _speak(scheduler, count, texts)
    wall = time.perf_counter() - started
    first = np.array([r["first_audio_s"] for r in results]) * 1000
    stalls = [r["stall_s"] for r in results]
    return {
        "sessions": count,
        "audio_s_per_s": round(sum(r["audio_s"] for r in results) / wall, 1),
        "first_audio_ms": {
            "median": round(float(np.median(first)), 1),
            "p95": round(float(np.percentile(first, 95)), 1),
        },
        "stalled_sessions": sum(1 for s in stalls if s > 0.05),
        "max_stall_s": round(max(stalls), 3),
        "wall_s": round(wall, 2),
        "passes": len(passes),
        "shared_passes": sum(1 for sessions in passes if sessions > 1),
        "most_sessions_in_a_pass": max(passes, default=0),
        "claimed_capacity": scheduler.calibrated_capacity,
    }


async def _speak(scheduler: Scheduler, count: int, texts: list[str]) -> list[dict]:
    """`_sessions`' sessions on the started `scheduler`, which it stops."""
    try:
        results = await asyncio.gather(
            *(
                _session(
                    scheduler,
                    owner,
                    [texts[(owner + k) % len(texts)] for k in range(min(len(texts), SENTENCES_PER_SESSION))],
                    SPEAKERS[owner % len(SPEAKERS)],
                    ARRIVAL_SPREAD_S * owner / count if count > 1 else 0.0,
                )
                for owner in range(count)
            )
        )
    finally:
        await scheduler.stop()
    return results


def capacity(runs: list[dict[str, Any]]) -> int:
    """The most sessions the batched engine kept gap-free (no listener stalled) with their p95 first
    audio within its target: the figure `deploy plan` scales a GPU instance on (`deploy/capacity.py`
    reads it from `out/gpu-check/gpu_check.json`); 0 where none was."""
    kept = [
        r["sessions"]
        for r in runs
        if r["stalled_sessions"] == 0 and r["first_audio_ms"]["p95"] <= TARGETS["p95_first_audio_ms_at_32"]
    ]
    return max(kept, default=0)


def _fresh(calibration: Calibration | None) -> Calibration | None:
    """A copy for one run: the scheduler moves its figures with every step it times."""
    return None if calibration is None else Calibration.from_json(calibration.to_json())


def first_audio_ms(
    engine: SpeechEngine, config: TTSConfig, calibration: Calibration | None, text: str, trials: int
) -> float:
    """The median time to `text`'s first audio (the 20-word sentence), one session, through the
    scheduler."""

    async def once() -> float:
        scheduler = Scheduler(
            engine, WindowPlan.from_config(config, engine.lanes), _fresh(calibration), capacity=1
        )
        scheduler.start()
        try:
            result = await _session(scheduler, 0, [text], SPEAKERS[0], 0.0)
        finally:
            await scheduler.stop()
        return result["first_audio_s"] * 1000

    return round(float(np.median([asyncio.run(once()) for _ in range(trials)])), 1)


def verdict(result: dict[str, Any]) -> str:
    """One line: the figures the issue's targets name, each against its target."""
    at32 = next((r for r in result["sessions"]["batched"] if r["sessions"] == 32), None)
    target = TARGETS
    parts = [
        f"20-word first audio {result['first_audio_ms']} ms (<= {target['first_audio_20_words_ms']:.0f})"
    ]
    if at32 is not None:
        parts.append(
            f"32 sessions {at32['audio_s_per_s']} audio-s/s (>= {target['audio_s_per_s_at_32']:.0f}), "
            f"p95 first audio {at32['first_audio_ms']['p95']} ms "
            f"(<= {target['p95_first_audio_ms_at_32']:.0f})"
        )
    met = result["first_audio_ms"] <= TARGETS["first_audio_20_words_ms"] and (
        at32 is not None
        and at32["audio_s_per_s"] >= TARGETS["audio_s_per_s_at_32"]
        and at32["first_audio_ms"]["p95"] <= TARGETS["p95_first_audio_ms_at_32"]
    )
    checks = "equivalent" if result["equivalence"]["within"] else "NOT EQUIVALENT"
    where = f"batching on {result['device']} ({result['weights']} weights)"
    return f"{where}: {'; '.join(parts)}; batched {checks}; targets {'met' if met else 'not met'}"


def measure(
    engine: SpeechEngine, config: TTSConfig, quick: bool, weights: str, extra: dict
) -> dict[str, Any]:
    """Everything above on a loaded engine (`config` as it was loaded with); `extra` joins the JSON."""
    voice = SPEAKERS[0]
    warm_up_s = 0.0 if quick else engine.warm_up(voice)
    calibration = None if quick else calibrate(engine, voice, config.threads)
    texts = [QUICK_TEXT] if quick else SESSION_TEXTS
    features = [
        engine.features(tokens, SPEAKERS[i % len(SPEAKERS)], 1.0)
        for i, text in enumerate(texts)
        for tokens in engine.segments(text, "en-us")
    ]
    lengths = QUICK_LENGTHS if quick else [20, 40, 136, 28, 64]
    windows = windows_of(features, len(QUICK_LENGTHS) if quick else EQUIVALENCE_SESSIONS, lengths)
    result: dict[str, Any] = {
        "device": engine.device,
        "weights": weights,
        "warm_up_s": round(warm_up_s, 2),
        **extra,
    }
    result["equivalence"] = equivalence(engine, windows)
    result["throughput"] = throughput(engine, windows, 1 if quick else 3)
    first_text = QUICK_TEXT if quick else FIRST_AUDIO_TEXT
    result["first_audio_ms"] = first_audio_ms(engine, config, calibration, first_text, 1 if quick else 5)
    sweep: dict[str, list[dict]] = {"batched": [], "unbatched": []}
    batch = engine.batch
    for mode, size in (("batched", batch), ("unbatched", 1)):
        engine.batch = size
        for count in QUICK_SESSIONS if quick else SESSIONS:
            sweep[mode].append(asyncio.run(_sessions(engine, config, calibration, count, texts)))
    engine.batch = batch
    result["sessions"] = sweep
    result["capacity"] = capacity(sweep["batched"])
    result["where"] = {
        "engine": engine.name,
        "device": engine.device,
        "cpu": report.processor(),
        "cores": os.cpu_count(),
    }
    result["calibration"] = None if calibration is None else calibration.summary()
    return result


def table(result: dict[str, Any]) -> str:
    rows = []
    for mode, runs in result["sessions"].items():
        for r in runs:
            rows.append(
                [
                    mode,
                    r["sessions"],
                    r["audio_s_per_s"],
                    r["first_audio_ms"]["median"],
                    r["first_audio_ms"]["p95"],
                    r["stalled_sessions"],
                    r["max_stall_s"],
                    f"{r['shared_passes']}/{r['passes']}",
                    r["claimed_capacity"],
                ]
            )
    headers = [
        "mode",
        "sessions",
        "audio-s/s",
        "first ms (median)",
        "first ms (p95)",
        "stalled",
        "max stall s",
        "passes shared",
        "claimed",
    ]
    return report.table(headers, rows)


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (rate_ax, first_ax) = report.figure(
        f"Kokoro-82M torch decoder batching on {result['device']} ({result['weights']} weights)",
        columns=2,
        width=5,
    )
    for mode, color in (("batched", report.OURS), ("unbatched", report.ARTICLE)):
        runs = result["sessions"][mode]
        sessions = [r["sessions"] for r in runs]
        rate_ax.plot(sessions, [r["audio_s_per_s"] for r in runs], "o-", color=color, label=mode)
        first_ax.plot(sessions, [r["first_audio_ms"]["p95"] for r in runs], "o-", color=color, label=mode)
    rate_ax.set(title="audio seconds per second", xlabel="sessions at once", xscale="log")
    first_ax.set(title="first audio, p95 (ms)", xlabel="sessions at once", xscale="log")
    rate_ax.legend()
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    """`python -m benchmarks batching`: the real weights, on CUDA where torch sees it, else the CPU."""
    from tts.engines.torch.engine import TorchEngine
    from tts.engines.torch.export import hexgrad_layout

    config = replace(TTSConfig.from_env(), engine="torch")
    engine = TorchEngine(config, hexgrad_layout(config))
    result = measure(engine, config, quick, "real", {"machine": report.machine()})
    print(table(result))
    print(verdict(result))
    return report.write(out, "batching", result, plot(result), quick)
