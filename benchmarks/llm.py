"""`llm`: SmolLM2-135M, the emulated Bedrock's default model, on this CPU (`emulator/llm/smollm/`), on
both runtimes in one run: the GGUF's 4-bit blocks on onnxruntime-genai (the default) against torch
float32 (the baseline), each with the thread budget the emulator gives it (emulator/llm/threads.py),
ratios printed.

- warm first token and tokens per second: the model loaded once (its load time reported, not counted as
  warm), one untimed warm-up answer, then RUNS answers (1 with --quick); medians. Targets: first token
  <= 300 ms, >= 40 tokens/s (onnxruntime-genai).
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
from emulator.llm.smollm.genai import SmolLM2GenaiModel
from emulator.llm.smollm.model import SmolLM2Model
from emulator.llm.smollm.weights import MODEL_DIR_NAME
from emulator.llm.threads import thread_budget

RUNS, STREAMS = 5, 8
# An answer long enough (a few sentences) to measure tokens per second.
PROMPT = "Tell me about the weather in Lisbon."
TARGET_FIRST_TOKEN_MS, TARGET_TOKENS_PER_S, TARGET_CONCURRENT_FIRST_TOKEN_S = 300, 40, 2.0


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
        "backend": type(model).__name__,
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


BACKENDS = {"onnxruntime-genai gguf int4": SmolLM2GenaiModel, "torch float32": SmolLM2Model}


def plot(result: dict[str, Any]) -> Any:
    fig, (single, concurrent) = report.figure("SmolLM2-135M on this CPU, both runtimes", columns=2, width=9)
    names = list(result["backends"])
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        answers = result["backends"][name]["single"]["runs"]
        xs = [n + index * width for n in range(1, len(answers) + 1)]
        single.bar(xs, [r["first_token_ms"] for r in answers], width=width, label=name)
        rows = result["backends"][name]["concurrent"]["runs"]
        xs = [n + index * width for n in range(1, len(rows) + 1)]
        concurrent.bar(xs, [r["first_token_s"] for r in rows], width=width, label=name)
    report.reference_line(
        single, TARGET_FIRST_TOKEN_MS, f"target {TARGET_FIRST_TOKEN_MS} ms", color=report.TARGET
    )
    single.set_xlabel("warm answer")
    single.set_ylabel("first token (ms)")
    single.legend()
    report.reference_line(
        concurrent,
        TARGET_CONCURRENT_FIRST_TOKEN_S,
        f"target {TARGET_CONCURRENT_FIRST_TOKEN_S:g} s",
        color=report.TARGET,
    )
    concurrent.set_xlabel("stream (started at once)")
    concurrent.set_ylabel("first token (s)")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    backends: dict[str, Any] = {}
    for name, backend in BACKENDS.items():
        model = backend(threads=thread_budget(own_process=backend.OWN_PROCESS))
        backends[name] = {
            "single": single_stream(model, runs=1 if quick else RUNS),
            "concurrent": concurrent_streams(model, streams=3 if quick else STREAMS),
        }
    ours, base = (backends[name] for name in BACKENDS)
    result = {
        "backends": backends,
        "ratios": {
            "tokens_per_s": round(ours["single"]["tokens_per_s"] / base["single"]["tokens_per_s"], 2),
            "first_token_ms": round(ours["single"]["first_token_ms"] / base["single"]["first_token_ms"], 2),
        },
        # greedy decoding on the same weights (emulator/llm/smollm/gguf_blocks.py): the same words
        "same_answer": ours["single"]["runs"][0]["text"] == base["single"]["runs"][0]["text"],
    }
    rows = []
    for name, figures in backends.items():
        single, firsts = figures["single"], figures["concurrent"]["first_token_s"]
        rows += [
            (f"{name}: load (s)", single["load_s"], ""),
            (f"{name}: warm first token (ms)", single["first_token_ms"], f"<= {TARGET_FIRST_TOKEN_MS}"),
            (
                f"{name}: tokens/s ({single['threads']} threads)",
                single["tokens_per_s"],
                f">= {TARGET_TOKENS_PER_S}",
            ),
            (
                f"{name}: first token of {figures['concurrent']['streams']} at once, max (s)",
                firsts["max"],
                "<= 2",
            ),
        ]
    rows.append(("tokens/s, onnxruntime-genai / torch", result["ratios"]["tokens_per_s"], ""))
    rows.append(("the same answer on both", result["same_answer"], "True"))
    print(report.table(["SmolLM2-135M", "measured", "target"], rows))
    print(f"answer: {ours['single']['runs'][0]['text']!r}")
    return report.write(out, "llm", result, plot(result), quick)
