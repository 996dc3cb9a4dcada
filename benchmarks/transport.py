"""`transport`: the article's first measurement. Time to first audio byte through the emulator with the
official HTTP/2 client, for the whole four-sentence, 267-character text sent as one message vs only its
first sentence.

A message is computed one segment (one model forward pass, up to 510 phoneme tokens) at a time, so the
first audio byte of a message waits for its whole first segment: here the whole text is one segment.
Sending the first sentence as soon as it exists is the case for incremental chunking. Each trial
opens a fresh session on the endpoint, sends one message and times send -> first binary frame; trials
alternate between the two cases so machine noise hits both alike. The article reports means over five
trials against the live endpoint: 329.3 -> 156.7 ms, 52.4% sooner.
"""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.emulated import EmulatorProcess, speak
from benchmarks.texts import ARTICLE_TEXT, FIRST_SENTENCE

ARTICLE = {"whole_text_ms": 329.3, "first_sentence_ms": 156.7, "improvement_pct": 52.4}
CASES = {"first_sentence": FIRST_SENTENCE, "whole_text": ARTICLE_TEXT}


async def measure(trials: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    with EmulatorProcess() as emu:
        client = await emu.client()
        for text in CASES.values():  # warm-up: connection, first-call paths in the container
            await speak(client, text)
        for n in report.progress(range(trials), "trials (each case once)"):
            order = list(CASES) if n % 2 == 0 else list(reversed(CASES))
            for case in order:
                first_ms, _ = await speak(client, CASES[case])
                samples[case].append(round(first_ms, 1))
    return samples


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (ax, rel) = report.figure(
        "Time to first audio byte: the whole text as one message vs its first sentence", columns=2
    )
    labels = [
        f"first sentence only\n({len(FIRST_SENTENCE)} characters)",
        f"whole text as one message\n({len(ARTICLE_TEXT)} characters, 4 sentences)",
    ]
    positions = [0, 1]
    width = 0.36
    ours = [result["first_sentence_ms"], result["whole_text_ms"]]
    bars = ax.bar([p - width / 2 for p in positions], ours, width, color=report.OURS, label="ours (mean)")
    report.label_bars(ax, bars)
    for p, case in zip(positions, CASES, strict=True):
        trials = result["trials_ms"][case]
        ax.scatter([p - width / 2] * len(trials), trials, color="black", s=10, zorder=3, label=None)
    article = [ARTICLE["first_sentence_ms"], ARTICLE["whole_text_ms"]]
    bars = ax.bar(
        [p + width / 2 for p in positions],
        article,
        width,
        color=report.ARTICLE,
        hatch="//",
        label="the article (mean of 5, live GPU endpoint)",
    )
    report.label_bars(ax, bars, "{:.1f}")
    ax.set_xticks(positions, labels)
    ax.set_ylabel("time to first audio byte (ms)")
    ax.set_title("absolute (dots: each of our trials)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    bars = rel.bar(
        [0, 1],
        [result["improvement_pct"], ARTICLE["improvement_pct"]],
        0.5,
        color=[report.OURS, report.ARTICLE],
        hatch=["", "//"],
    )
    report.label_bars(rel, bars, "{:.1f}%")
    rel.set_xticks([0, 1], ["ours\n(CPU, through the emulator)", "the article\n(live endpoint)"])
    rel.set_ylim(0, 100)
    rel.set_ylabel("first audio sooner with the first sentence (%)")
    rel.set_title("relative: 1 - first sentence / whole text (means)", fontsize=10)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    trials = 3 if quick else 10
    samples = asyncio.run(measure(trials))
    means = {case: round(statistics.fmean(values), 1) for case, values in samples.items()}
    medians = {case: round(statistics.median(values), 1) for case, values in samples.items()}
    result = {
        "trials": trials,
        "text": {"first_sentence": FIRST_SENTENCE, "whole_text": ARTICLE_TEXT, "chars": len(ARTICLE_TEXT)},
        "first_sentence_ms": means["first_sentence"],
        "whole_text_ms": means["whole_text"],
        "first_sentence_median_ms": medians["first_sentence"],
        "whole_text_median_ms": medians["whole_text"],
        "improvement_pct": round((1 - means["first_sentence"] / means["whole_text"]) * 100, 1),
        "trials_ms": samples,
        "article": ARTICLE,
    }
    rows = [
        ("first sentence", means["first_sentence"], medians["first_sentence"], ARTICLE["first_sentence_ms"]),
        ("whole text", means["whole_text"], medians["whole_text"], ARTICLE["whole_text_ms"]),
        ("improvement (%)", result["improvement_pct"], "", ARTICLE["improvement_pct"]),
    ]
    print(report.table(["first audio byte (ms)", "mean", "median", "article (mean)"], rows))
    return report.write(out, "transport", result, plot(result), quick)
