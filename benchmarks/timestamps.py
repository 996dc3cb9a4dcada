"""`timestamps`: how close the container's word timings (`"timestamps": true`, taken from the duration
predictor: `tts/text/timings.py`) are to when the words are heard.

Each held-out sentence (`TIMESTAMP_SENTENCES`; the timing rules were tuned on `CLIPS`) is spoken
through the container (`POST /invocations`, SSE, PCM, the default ONNX engine with windowed decoding)
at speed 1 and, in the full run, 0.8 and 1.3. Two references judge the words' times:
- an independent ASR: Whisper base (`tools/asr.py`, faster-whisper with `word_timestamps=True`:
  its cross-attention aligned to the audio by dynamic time warping). Words both sides agree on (the
  same word, in order) are paired. The headline error is the hand-over between two neighbouring words:
  Whisper's words abut, so a pause is counted into one of them; ours leave pauses out, and any point of
  a pause is a right hand-over. Each paired word's raw start and end errors are kept too (Whisper starts
  the first word at the audio's first sample and rounds to 20 ms, so those bound the error loosely);
- the audio itself: where a pause of at least PAUSE_MS turns to sound, the nearest word start of ours.
Targets (the hand-over against Whisper): median <= 50 ms, 95th percentile <= 120 ms.
"""

from __future__ import annotations

import base64
import difflib
import itertools
import re
import statistics
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks import report
from benchmarks.container import tts_process
from benchmarks.stats import summarize
from benchmarks.texts import TIMESTAMP_SENTENCES
from tools.asr import word_timings
from tts.wire.sse import SSEParser

TARGETS = {"median_ms": 50.0, "p95_ms": 120.0}
BLOCK = 240  # 10 ms at 24 kHz
BLOCK_MS = 10
SILENT_RMS = 0.01  # -40 dBFS
PAUSE_MS = 150
SPEEDS = (1.0, 0.8, 1.3)


def speak(base_url: str, text: str, speed: float) -> tuple[list[dict[str, Any]], bytes]:
    """The container's words (every `words` event, in order) and the PCM of one request."""
    body = {"text": text, "format": "pcm", "transport": "sse", "speed": speed, "timestamps": True}
    words: list[dict[str, Any]] = []
    audio = bytearray()
    with httpx.stream("POST", f"{base_url}/invocations", json=body, timeout=120, trust_env=False) as response:
        if response.status_code != 200:
            raise RuntimeError(f"the container answered {response.status_code}: {response.read()[:200]!r}")
        parser = SSEParser()
        for raw in response.iter_raw():
            for event in parser.feed(raw):
                if event["type"] == "words":
                    words += event["words"]
                elif event["type"] == "audio_chunk":
                    audio += base64.b64decode(event["data"])
                elif event["type"] == "error":
                    raise RuntimeError(f"{event['code']}: {event['message']}")
    return words, bytes(audio)


def _normal(word: str) -> str:
    return re.sub(r"[^a-z0-9']", "", word.lower())


def pair_words(
    ours: list[tuple[str, float, float]], heard: list[tuple[str, float, float]]
) -> list[tuple[tuple[str, float, float], tuple[str, float, float]]]:
    """The words both sides agree on, in order: (ours, Whisper's) for each, by their normalised text."""
    matcher = difflib.SequenceMatcher(
        None, [_normal(w) for w, _, _ in ours], [_normal(w) for w, _, _ in heard], autojunk=False
    )
    return [(ours[a + k], heard[b + k]) for a, b, size in matcher.get_matching_blocks() for k in range(size)]


def boundary_errors(
    ours: list[tuple[str, float, float]], heard: list[tuple[str, float, float]]
) -> dict[str, list[float]]:
    """Errors in ms, ours - Whisper's. `boundary`: for two words next to each other on both sides, the
    distance from Whisper's hand-over (its second word's start) to ours, which is the span from our first
    word's end to our second word's start (a pause between them: any point in it is a right boundary);
    signed, 0 inside the span. `start` and `end`: every paired word's start and end as they are (Whisper
    counts a pause into a neighbouring word, and starts the first word at the audio's start)."""
    pairs = pair_words(ours, heard)
    index = {id(word): n for n, word in enumerate(ours)}
    boundaries = []
    for (first, heard_first), (second, heard_second) in itertools.pairwise(pairs):
        if (
            index[id(second)] != index[id(first)] + 1
            or heard.index(heard_second) != heard.index(heard_first) + 1
        ):
            continue
        handover = heard_second[1]
        boundaries.append(max(first[2] - handover, 0.0) + min(second[1] - handover, 0.0))
    return {
        "boundary": boundaries,
        "start": [mine[1] - theirs[1] for mine, theirs in pairs],
        "end": [mine[2] - theirs[2] for mine, theirs in pairs],
    }


def onset_errors(pcm: bytes, ours: list[tuple[str, float, float]]) -> list[float]:
    """A second reference that needs no ASR: where the audio itself turns from a pause to sound. Every
    silent run of at least PAUSE_MS (RMS under SILENT_RMS in 10 ms blocks: the leading silence, and
    pauses at punctuation; a stop's closure is shorter) ends at an onset; the error is the start of our
    word nearest that onset minus the onset, in ms."""
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
    blocks = len(audio) // BLOCK
    rms = np.sqrt(np.mean(audio[: blocks * BLOCK].reshape(blocks, BLOCK) ** 2, axis=1))
    starts = [start for _, start, _ in ours]
    errors, silent = [], 0
    for n, level in enumerate(rms):
        if level < SILENT_RMS:
            silent += 1
            continue
        if silent * BLOCK_MS >= PAUSE_MS and starts:
            onset = n * BLOCK_MS
            errors.append(min((start - onset for start in starts), key=abs))
        silent = 0
    return errors


def measure(sentences: tuple[str, ...], speeds: tuple[float, ...]) -> list[dict[str, Any]]:
    spoken = []
    with tts_process() as base:
        jobs = [(text, speed) for speed in speeds for text in sentences]
        for text, speed in report.progress(jobs, "sentences x speeds"):
            words, pcm = speak(base, text, speed)
            spoken.append((text, speed, words, pcm))
    rows = []
    for text, speed, words, pcm in report.progress(spoken, "aligning with Whisper"):
        ours = [(w["text"], w["start_ms"], w["end_ms"]) for w in words]
        heard = word_timings(pcm)
        errors = boundary_errors(ours, heard) | {"onset": onset_errors(pcm, ours)}
        rows.append(
            {
                "text": text,
                "speed": speed,
                "audio_ms": round(len(pcm) / 48, 1),
                "ours": ours,
                "whisper": [(w, round(s, 1), round(e, 1)) for w, s, e in heard],
                "paired_words": len(errors["start"]),
                **{f"{key}_error_ms": [round(e, 1) for e in values] for key, values in errors.items()},
            }
        )
    return rows


KINDS = {
    "boundary": "hand-over between two words vs Whisper's",
    "onset": "start after a pause vs the audio's onset",
    "start": "word start vs Whisper's",
    "end": "word end vs Whisper's",
}


def summarize_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def errors(selected: list[dict[str, Any]], kind: str) -> list[float]:
        return [e for row in selected for e in row[f"{kind}_error_ms"]]

    result: dict[str, Any] = {
        "sentences": len({row["text"] for row in rows}),
        "words": sum(len(row["ours"]) for row in rows),
        "paired_words": sum(row["paired_words"] for row in rows),
        "absolute": {kind: summarize([abs(e) for e in errors(rows, kind)]) for kind in KINDS},
        "mean_signed_ms": {kind: round(statistics.fmean(errors(rows, kind) or [0.0]), 1) for kind in KINDS},
        "boundary_by_speed": {
            str(speed): summarize(
                [abs(e) for e in errors([r for r in rows if r["speed"] == speed], "boundary")]
            )
            for speed in sorted({row["speed"] for row in rows})
        },
    }
    boundary = result["absolute"]["boundary"]
    result["meets_targets"] = all(boundary[key] <= target for key, target in TARGETS.items())
    return result


def plot(result: dict[str, Any], rows: list[dict[str, Any]]) -> report.Figure:
    fig, (hist_ax, kinds_ax) = report.figure(
        f"Word timings, {result['paired_words']} words of {result['sentences']} held-out sentences",
        columns=2,
    )
    errors = [abs(e) for row in rows for e in row["boundary_error_ms"]]
    hist_ax.hist(errors, bins=np.arange(0, max([*errors, 200]) + 10, 10), color=report.OURS)
    for key, label in (("median_ms", "median"), ("p95_ms", "95th percentile")):
        report.reference_line(
            hist_ax, TARGETS[key], f"target {label}: {TARGETS[key]:.0f} ms", False, report.TARGET
        )
    hist_ax.set_xlabel("|our hand-over between two words - Whisper's| (ms)")
    hist_ax.set_ylabel("word boundaries")
    boundary = result["absolute"]["boundary"]
    hist_ax.set_title(
        f"median {boundary['median_ms']:.0f} ms, p95 {boundary['p95_ms']:.0f} ms; "
        f"ours {result['mean_signed_ms']['boundary']:+.0f} ms on average",
        fontsize=10,
    )
    hist_ax.legend(fontsize=8)
    x = np.arange(len(KINDS))
    for offset, key, color in ((-0.2, "median_ms", report.OURS), (0.2, "p95_ms", report.SECOND)):
        values = [result["absolute"][kind].get(key, 0.0) for kind in KINDS]
        report.label_bars(kinds_ax, kinds_ax.bar(x + offset, values, 0.4, color=color, label=key[:-3]))
    kinds_ax.set_xticks(x, [label.replace(" vs ", "\nvs ") for label in KINDS.values()], fontsize=7)
    kinds_ax.set_ylabel("absolute error (ms)")
    kinds_ax.set_title("against Whisper base, and against the audio itself", fontsize=10)
    kinds_ax.legend(fontsize=8)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    rows = measure(TIMESTAMP_SENTENCES[:6] if quick else TIMESTAMP_SENTENCES, SPEEDS[:1] if quick else SPEEDS)
    result = summarize_rows(rows) | {"targets": TARGETS, "per_sentence": rows}
    table_rows = [
        (
            label,
            result["absolute"][kind].get("count", 0),
            result["absolute"][kind].get("median_ms", "-"),
            result["absolute"][kind].get("p95_ms", "-"),
            result["mean_signed_ms"][kind],
        )
        for kind, label in KINDS.items()
    ]
    print(report.table(["error", "count", "median |ms|", "p95 |ms|", "mean signed ms"], table_rows))
    print(
        f"targets for the hand-over: median <= {TARGETS['median_ms']:.0f} ms, p95 <= {TARGETS['p95_ms']:.0f} "
        f"ms: {'met' if result['meets_targets'] else 'NOT met'}"
    )
    return report.write(out, "timestamps", result, plot(result, rows), quick)
