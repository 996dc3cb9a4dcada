"""`agent`: the article's second measurement (its figure 4). Bidi vs batch time to first audio for the
same prompt and the same reply: the emulator's paced script model (400 ms to the first token, then 60
tokens/s) answers both modes identically, so only the moment synthesis starts differs. Once on loopback
("local") and once with the emulator's injected network latency on the SageMaker hop (25 ± 5 ms each
way: the deployed hop). Without --quick, three more conditions: two chunk at sentences only (no early
first fragment at a clause), and one decodes each segment whole in the container
(`TTS_WINDOW_FIRST_FRAMES=0`), which shows what streaming inside a segment gives the agent's first audio.

Each condition starts a fresh local stack (emulator + the real Kokoro container + the agent), warms it
with one untimed bidi turn, then alternates the two modes run by run so machine noise hits both alike.
Times are taken where a client sees the events (`tools.demo`). The article: bidi reached first audio
2.4x sooner than batch locally and 3.5x sooner against the deployed AgentCore runtime.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from benchmarks import report
from benchmarks.stats import summarize
from emulator.config import EmulatorConfig
from facts import MODES
from local_stack.stack import local_stack
from tools.demo import DEFAULT_PROMPT, compare, run_once

ARTICLE = {"ratio": 2.4, "ratio_with_latency": 3.5}
LATENCY_MS, JITTER_MS = 25.0, 5.0
FIRST_TOKEN_MS, TOKENS_PER_S = 400, 60.0
SENTENCES_ONLY = {"AGENT_FIRST_FRAGMENT_WORDS": "off"}
WHOLE_SEGMENTS = {"TTS_WINDOW_FIRST_FRAMES": "0"}
WHOLE_SEGMENTS_CONDITION = "local, whole-segment decoding"


class Condition(NamedTuple):
    name: str
    emulator: EmulatorConfig
    agent_env: dict[str, str] | None = None
    tts_env: dict[str, str] | None = None  # for the TTS replica (its model's container environment)


def run_condition(condition: Condition, runs: int) -> dict[str, Any]:
    name = condition.name
    with local_stack(condition.emulator, agent_env=condition.agent_env, tts_env=condition.tts_env) as stack:
        run_once(stack.agent_url, "bidi", DEFAULT_PROMPT, None, None)  # warm-up: connections, lazy imports
        summary = compare(stack.agent_url, DEFAULT_PROMPT, runs=runs)
    result: dict[str, Any] = {"condition": name}
    for mode in MODES:
        ttfa = [r["ttfa_ms"] for r in summary[mode]["runs"]]
        result[mode] = {
            "ttfa_ms": summarize(ttfa) | {"all": ttfa},
            "ttft_ms": summary[mode]["ttft_ms"],
            "total_ms": summary[mode]["total_ms"],
            "chunks": summary[mode]["chunks"],
        }
    result["ratio"] = round(
        result["batch"]["ttfa_ms"]["median_ms"] / result["bidi"]["ttfa_ms"]["median_ms"], 2
    )
    return result


def conditions(quick: bool) -> list[Condition]:
    local = dataclasses.replace(
        EmulatorConfig.from_env(),
        http_port=0,
        h2_port=0,
        llm_backend="script",  # the deterministic answer, so both modes and every run speak the same text
        llm_first_token_ms=FIRST_TOKEN_MS,
        llm_tokens_per_s=TOKENS_PER_S,
    )
    deployed = dataclasses.replace(
        local,
        latency_in_ms=LATENCY_MS,
        latency_out_ms=LATENCY_MS,
        jitter_in_ms=JITTER_MS,
        jitter_out_ms=JITTER_MS,
    )
    hop = f"latency {LATENCY_MS:g}±{JITTER_MS:g} ms"
    chosen = [Condition("local", local), Condition(f"deployed ({hop})", deployed)]
    if not quick:
        chosen += [
            Condition("local, sentences only", local, SENTENCES_ONLY),
            Condition(f"deployed ({hop}), sentences only", deployed, SENTENCES_ONLY),
            Condition(WHOLE_SEGMENTS_CONDITION, local, tts_env=WHOLE_SEGMENTS),
        ]
    return chosen


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (ratio_ax, ms_ax) = report.figure(
        "Time to first audio: bidi vs batch, same prompt, same reply", columns=2
    )
    main = result["conditions"][:2]
    x = np.arange(2)
    bars = ratio_ax.bar(x - 0.2, [c["ratio"] for c in main], 0.4, color=report.OURS, label="ours (medians)")
    report.label_bars(ratio_ax, bars, "{:.1f}x")
    bars = ratio_ax.bar(
        x + 0.2,
        [ARTICLE["ratio"], ARTICLE["ratio_with_latency"]],
        0.4,
        color=report.ARTICLE,
        hatch="//",
        label="the article (AgentCore, Claude)",
    )
    report.label_bars(ratio_ax, bars, "{:.1f}x")
    report.reference_line(ratio_ax, 1.0, "no difference")
    ratio_ax.set_xticks(
        x, ["local\n(loopback)", f"deployed\n(emulated hop: {LATENCY_MS:g}±{JITTER_MS:g} ms)"]
    )
    ratio_ax.set_ylabel("batch time to first audio ÷ bidi time to first audio")
    ratio_ax.set_title("how many times sooner bidi starts speaking (the article's figure 4)", fontsize=9)
    ratio_ax.set_ylim(0, max([c["ratio"] for c in main] + [ARTICLE["ratio_with_latency"]]) * 1.4)
    ratio_ax.legend(fontsize=8, loc="upper center", ncol=3)
    everything = result["conditions"]
    y = np.arange(len(everything))
    for offset, mode, color in ((-0.2, "bidi", report.OURS), (0.2, "batch", report.SECOND)):
        values = [c[mode]["ttfa_ms"]["median_ms"] for c in everything]
        bars = ms_ax.barh(y + offset, values, 0.4, color=color, label=mode)
        report.label_bars(ms_ax, bars, "{:,.0f}", horizontal=True)
    ms_ax.set_xlim(0, max(c["batch"]["ttfa_ms"]["median_ms"] for c in everything) * 1.18)
    ms_ax.set_yticks(y, [c["condition"] for c in everything], fontsize=8)
    ms_ax.invert_yaxis()
    ms_ax.set_xlabel("time to first audio, median (ms)")
    ms_ax.set_title(
        f"paced script model: {FIRST_TOKEN_MS} ms to first token, {TOKENS_PER_S:g} tokens/s", fontsize=9
    )
    ms_ax.legend(fontsize=8, loc="upper right")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    runs = 2 if quick else 5
    results = []
    for condition in report.progress(conditions(quick), "conditions (a fresh stack each)"):
        results.append(run_condition(condition, runs))
    result: dict[str, Any] = {
        "model": {"first_token_ms": FIRST_TOKEN_MS, "tokens_per_s": TOKENS_PER_S, "prompt": DEFAULT_PROMPT},
        "runs": runs,
        "ratio": results[0]["ratio"],
        "ratio_with_latency": results[1]["ratio"],
        "conditions": results,
        "article": ARTICLE,
    }
    whole = next((r for r in results if r["condition"] == WHOLE_SEGMENTS_CONDITION), None)
    if whole is not None:
        # how many times sooner bidi speaks with streamed decoding than with whole-segment decoding
        result["bidi_streamed_speedup"] = round(
            whole["bidi"]["ttfa_ms"]["median_ms"] / results[0]["bidi"]["ttfa_ms"]["median_ms"], 2
        )
    rows = []
    for r, article in itertools.zip_longest(results, [ARTICLE["ratio"], ARTICLE["ratio_with_latency"]]):
        bidi, batch = r["bidi"]["ttfa_ms"], r["batch"]["ttfa_ms"]
        rows.append(
            (
                r["condition"],
                bidi["median_ms"],
                batch["median_ms"],
                f"{r['ratio']:.1f}x",
                f"{article}x" if article else "",
            )
        )
    print(report.table(["condition", "bidi TTFA (ms)", "batch TTFA (ms)", "ratio", "article"], rows))
    return report.write(out, "agent", result, plot(result), quick)
