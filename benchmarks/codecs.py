"""`codecs`: the article's third measurement. 24 clips of varied sentences through the container
(`POST /invocations` with `"transport": "sse"`, the way audio reaches a browser) in PCM, MP3, AAC and
Opus at the container's bit rates. For each format: the bytes of the audio itself and the bytes of the
SSE stream that carries it as base64 JSON events; and the word error rate of the decoded audio through
an independent offline ASR (Whisper base, `tools/asr.py`).

The article: base64 inside SSE inflates the payload by about 33% (four base64 characters per three
bytes), and quality was the same across encodings (WER 0 for every codec, through Amazon Transcribe).
"""

from __future__ import annotations

import base64
import io
import statistics
from pathlib import Path
from typing import Any

import av
import httpx
import numpy as np

from benchmarks import report
from benchmarks.container import tts_process
from benchmarks.texts import CLIPS
from facts import PCM_BYTES_PER_S, SAMPLE_RATE
from tools.asr import transcribe, word_error_rate
from tts.wire.sse import SSEParser

FORMATS = ("pcm", "mp3", "aac", "opus")
ARTICLE = {"base64_overhead_pct": 33.0, "wer": 0.0, "pcm_kbps": 384.0}


def synthesize(base_url: str, text: str, audio_format: str) -> tuple[bytes, int]:
    """One clip: the audio bytes carried in the SSE events, and the size of the SSE stream itself."""
    body = {"text": text, "format": audio_format, "transport": "sse"}
    with httpx.stream("POST", f"{base_url}/invocations", json=body, timeout=120, trust_env=False) as response:
        if response.status_code != 200:
            raise RuntimeError(f"the container answered {response.status_code}: {response.read()[:200]!r}")
        parser, audio, size = SSEParser(), bytearray(), 0
        for raw in response.iter_raw():
            size += len(raw)
            for event in parser.feed(raw):
                if event["type"] == "audio_chunk":
                    audio += base64.b64decode(event["data"])
                elif event["type"] == "error":
                    raise RuntimeError(f"{event['code']}: {event['message']}")
    return bytes(audio), size


def to_pcm(data: bytes, audio_format: str) -> bytes:
    """Decode a compressed stream back to 24 kHz mono s16le (what a player would hear)."""
    if audio_format == "pcm":
        return data
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    out = bytearray()
    with av.open(io.BytesIO(data)) as container:
        for frame in container.decode(audio=0):
            for resampled in resampler.resample(frame):
                out += resampled.to_ndarray().astype(np.int16).tobytes()
    for resampled in resampler.resample(None):
        out += resampled.to_ndarray().astype(np.int16).tobytes()
    return bytes(out)


def measure(clips: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    with tts_process() as base:
        jobs = [(clip, fmt) for clip in clips for fmt in FORMATS]
        for clip, fmt in report.progress(jobs, "clips x formats"):
            audio, sse_bytes = synthesize(base, clip, fmt)
            pcm = to_pcm(audio, fmt)
            rows.append(
                {
                    "clip": clip,
                    "format": fmt,
                    "audio_bytes": len(audio),
                    "sse_bytes": sse_bytes,
                    "seconds": round(len(pcm) / PCM_BYTES_PER_S, 3),
                    "pcm": pcm,
                }
            )
    for row in report.progress(rows, "transcribing"):
        heard = transcribe(row.pop("pcm"))
        row["heard"] = heard
        row["wer"] = round(word_error_rate(row["clip"], heard), 3)
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    pcm_seconds = sum(r["seconds"] for r in rows if r["format"] == "pcm")
    formats = {}
    for fmt in FORMATS:
        mine = [r for r in rows if r["format"] == fmt]
        audio, sse = sum(r["audio_bytes"] for r in mine), sum(r["sse_bytes"] for r in mine)
        formats[fmt] = {
            "audio_bytes": audio,
            "sse_bytes": sse,
            "audio_kbps": round(audio * 8 / pcm_seconds / 1000, 1),
            "sse_kbps": round(sse * 8 / pcm_seconds / 1000, 1),
            "sse_overhead_pct": round((sse / audio - 1) * 100, 1),
            "mean_wer": round(statistics.fmean(r["wer"] for r in mine), 4),
            "clips_with_errors": sum(r["wer"] > 0 for r in mine),
        }
    pcm = formats["pcm"]
    return {
        "clips": len(rows) // len(FORMATS),
        "speech_seconds": round(pcm_seconds, 2),
        "raw_pcm_bytes": pcm["audio_bytes"],
        "base64_sse_bytes": pcm["sse_bytes"],
        "base64_overhead_pct": pcm["sse_overhead_pct"],
        "formats": formats,
    }


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (size_ax, wer_ax) = report.figure(
        f"{result['clips']} clips ({result['speech_seconds']:.0f} s of speech) through the container",
        columns=2,
    )
    formats = result["formats"]
    labels = ["PCM\n(raw s16le)", "MP3", "AAC\n(ADTS)", "Opus\n(Ogg)"]
    x = np.arange(len(FORMATS))
    bars = size_ax.bar(
        x - 0.2, [formats[f]["audio_kbps"] for f in FORMATS], 0.4, color=report.OURS, label="the audio itself"
    )
    report.label_bars(size_ax, bars)
    bars = size_ax.bar(
        x + 0.2,
        [formats[f]["sse_kbps"] for f in FORMATS],
        0.4,
        color=report.SECOND,
        label="as base64 JSON in SSE",
    )
    report.label_bars(size_ax, bars)
    report.reference_line(
        size_ax,
        ARTICLE["pcm_kbps"] * (1 + ARTICLE["base64_overhead_pct"] / 100),
        "the article: PCM 384 kbit/s + ~33% as base64",
    )
    size_ax.set_xticks(x, labels)
    size_ax.set_ylabel("kbit per second of speech")
    size_ax.set_title(
        f"base64 in SSE adds {result['base64_overhead_pct']:.1f}% (the article: ~33%)", fontsize=10
    )
    size_ax.legend(fontsize=8)
    wers = [formats[f]["mean_wer"] * 100 for f in FORMATS]
    bars = wer_ax.bar(x, wers, 0.5, color=report.OURS, label="ours (Whisper base, offline)")
    report.label_bars(wer_ax, bars, "{:.1f}")
    report.reference_line(wer_ax, 0.0, "the article: 0 for every codec (Amazon Transcribe)")
    wer_ax.set_xticks(x, labels)
    wer_ax.set_ylim(0, max(10.0, max(wers) * 1.3))
    wer_ax.set_ylabel("mean word error rate (%)")
    wer_ax.set_title("is the speech still understood after the codec?", fontsize=10)
    wer_ax.legend(fontsize=8)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    rows = measure(CLIPS[:4] if quick else CLIPS)
    result = summarize(rows) | {"article": ARTICLE, "per_clip": rows}
    table_rows = [
        (
            fmt,
            stats["audio_kbps"],
            f"{stats['audio_bytes']:,}",
            f"{stats['sse_bytes']:,}",
            stats["sse_overhead_pct"],
            stats["mean_wer"],
        )
        for fmt, stats in result["formats"].items()
    ]
    print(report.table(["format", "kbit/s", "audio bytes", "SSE bytes", "SSE +%", "mean WER"], table_rows))
    print(
        f"base64 in SSE over raw PCM: +{result['base64_overhead_pct']:.1f}% "
        f"(the article: ~{ARTICLE['base64_overhead_pct']:.0f}%)"
    )
    return report.write(out, "codecs", result, plot(result), quick)
