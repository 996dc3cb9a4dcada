"""`llm`: SmolLM2-135M, the emulated Bedrock's default model, on this CPU (`emulator/llm/smollm/`).

- warm first token and tokens per second: the model loaded once (its load time reported, not counted as
  warm), one untimed warm-up answer, then RUNS answers (1 with --quick); medians. Targets: first token
  <= 300 ms, >= 15 tokens/s.
- concurrent streams: STREAMS answers (3 with --quick) started at the same moment through `stream()`
  (what ConverseStream calls), each one's first-token time from the start. Target: all <= 2 s (the
  decoder takes the streams in turns token by token, so none waits for another's whole answer).

The machine's load average is in the JSON (benchmarks/report.py): on 2 busy cores the figures spread with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import report
from emulator.llm.base import ConverseRequest
from emulator.llm.smollm.model import SmolLM2Model
from emulator.llm.smollm.weights import MODEL_DIR_NAME

RUNS, STREAMS = 5, 8
# An answer long enough (a few sentences) to measure tokens per second.
PROMPT = "Tell me about the weather in Lisbon."
TARGET_FIRST_TOKEN_MS, TARGET_TOKENS_PER_S, TARGET_CONCURRENT_FIRST_TOKEN_S = 300, 15, 2.0


def request(prompt: str) -> ConverseRequest:
    return ConverseRequest("bench", [{"role": "user", "content": [{"text": prompt}]}])


def _timed_answer(model: SmolLM2Model, messages: list[dict[str, str]]) -> dict[str, Any]:
    stamps: list[float] = []
    pieces: list[str] = []

    def emit(piece: str) -> None:
        stamps.append(time.perf_counter())
        pieces.append(piece)

    began = time.perf_counter()
    model.generate(messages, emit, threading.Event())
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    first_ms = (stamps[0] - began) * 1000 if stamps else float("nan")
    return {"first_token_ms": round(first_ms, 1), "tokens_per_s": round(rate, 2), "text": "".join(pieces)}


def single_stream(model: SmolLM2Model, runs: int = RUNS, prompt: str = PROMPT) -> dict[str, Any]:
    """Warm first-token latency and tokens per second, medians of `runs` answers."""
    started = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - started
    messages = model._messages(request(prompt))
    model.generate(messages, lambda _: None, threading.Event())
    rows = [_timed_answer(model, messages) for _ in range(runs)]
    return {
        "model": MODEL_DIR_NAME,
        "threads": model.threads,
        "prompt": prompt,
        "load_s": round(load_s, 2),
        "first_token_ms": statistics.median(r["first_token_ms"] for r in rows),
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rows),
        "targets": {"first_token_ms": TARGET_FIRST_TOKEN_MS, "tokens_per_s": TARGET_TOKENS_PER_S},
        "runs": rows,
    }


async def _first_token_times(model: Any, requests: Sequence[ConverseRequest]) -> list[dict[str, float]]:
    began = time.perf_counter()

    async def one(converse: ConverseRequest) -> dict[str, float]:
        first = None
        tokens = 0
        async with contextlib.aclosing(model.stream(converse)) as stream:
            async for _ in stream:
                first = first or time.perf_counter() - began
                tokens += 1
        return {
            "first_token_s": round(first or float("nan"), 3),
            "done_s": round(time.perf_counter() - began, 3),
            "tokens": tokens,
        }

    return await asyncio.gather(*(one(r) for r in requests))


def concurrent_streams(model: SmolLM2Model, streams: int = STREAMS) -> dict[str, Any]:
    """`streams` answers started at once: each one's first-token time from the start."""
    model.load()
    asyncio.run(_first_token_times(model, [request(PROMPT)]))
    requests = [request(f"{PROMPT} Answer number {n + 1}.") for n in range(streams)]
    rows = asyncio.run(_first_token_times(model, requests))
    firsts = [r["first_token_s"] for r in rows]
    return {
        "model": MODEL_DIR_NAME,
        "streams": streams,
        "first_token_s": {"min": min(firsts), "median": statistics.median(firsts), "max": max(firsts)},
        "target_max_first_token_s": TARGET_CONCURRENT_FIRST_TOKEN_S,
        "runs": rows,
    }


def plot(result: dict[str, Any]) -> Any:
    fig, (single, concurrent) = report.figure("SmolLM2-135M on this CPU", columns=2, width=9)
    answers = result["single"]["runs"]
    single.bar(range(1, len(answers) + 1), [r["first_token_ms"] for r in answers], color=report.OURS)
    report.reference_line(
        single, TARGET_FIRST_TOKEN_MS, f"target {TARGET_FIRST_TOKEN_MS} ms", color=report.TARGET
    )
    single.set_xlabel("warm answer")
    single.set_ylabel("first token (ms)")
    rows = result["concurrent"]["runs"]
    concurrent.bar(range(1, len(rows) + 1), [r["first_token_s"] for r in rows], color=report.OURS)
    report.reference_line(
        concurrent,
        TARGET_CONCURRENT_FIRST_TOKEN_S,
        f"target {TARGET_CONCURRENT_FIRST_TOKEN_S:g} s",
        color=report.TARGET,
    )
    concurrent.set_xlabel(f"stream ({len(rows)} started at once)")
    concurrent.set_ylabel("first token (s)")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    model = SmolLM2Model()
    single = single_stream(model, runs=1 if quick else RUNS)
    concurrent = concurrent_streams(model, streams=3 if quick else STREAMS)
    result = {"single": single, "concurrent": concurrent}
    firsts = concurrent["first_token_s"]
    rows = [
        ("load (s)", single["load_s"], ""),
        ("warm first token (ms)", single["first_token_ms"], f"<= {TARGET_FIRST_TOKEN_MS}"),
        ("tokens/s", single["tokens_per_s"], f">= {TARGET_TOKENS_PER_S}"),
        (f"first token of {concurrent['streams']} at once, max (s)", firsts["max"], "<= 2"),
        (f"first token of {concurrent['streams']} at once, median (s)", firsts["median"], ""),
    ]
    print(report.table(["SmolLM2-135M", "measured", "target"], rows))
    print(f"answer: {single['runs'][0]['text']!r}")
    return report.write(out, "llm", result, plot(result), quick)
