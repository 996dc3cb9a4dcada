"""`framing`: the article's fourth measurement. MP3 audio inside SSE events, streamed through the
emulator's InvokeEndpointWithResponseStream (boto3, as a client of the real API would) with re-chunking
on: the emulator re-splits the container's bytes into PayloadParts of random sizes, as the network and
the service do. We count the transport chunks (PayloadParts) that end in the middle of an event, then
run two consumers over the very same chunks:

- naive: one chunk = one event (parse each PayloadPart as one `data: {...}` record);
- buffered: the article's loop, keep a buffer and cut events at the blank line ("\\n\\n"), which is
  `tts.wire.sse.SSEParser`, the project's one parser.

A failure is a chunk the consumer cannot turn into events (naive) or an event that never comes out
whole (buffered). The article saw four logical MP3 events arrive in six chunks, two of which ended
mid-event; the naive consumer fails on such healthy traffic and the buffered one does not.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config

from benchmarks import report
from benchmarks.emulated import EmulatorProcess
from benchmarks.texts import CLIPS
from facts import TTS_ENDPOINT
from tts.wire.sse import SSEError, SSEParser

RECHUNK = "200-3000"  # PayloadPart sizes in bytes; an MP3 event here is about 1.1 kB
RECHUNK_SEED = "12"
ARTICLE = {"events": 4, "chunks": 6, "chunks_ending_mid_event": 2}


@dataclass(frozen=True)
class Framing:
    events: int
    chunks: int
    chunks_ending_mid_event: int
    naive_failures: int
    naive_events: int
    buffered_failures: int
    buffered_events: int
    audio_bytes_match: bool


def naive_events(chunks: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    """One chunk = one event: every chunk that is not exactly one `data: {json}` record fails."""
    events, failures = [], 0
    for chunk in chunks:
        text = chunk.decode("utf-8", errors="replace")
        try:
            if not text.startswith("data:") or not text.endswith("\n\n") or text.count("\n\n") != 1:
                raise ValueError("not one whole event")
            events.append(json.loads(text[5:]))
        except ValueError:
            failures += 1
    return events, failures


def buffered_events(chunks: list[bytes]) -> tuple[list[dict[str, Any]], int]:
    """The article's loop: buffer, cut at the blank line."""
    parser, events, failures = SSEParser(), [], 0
    for chunk in chunks:
        try:
            events.extend(parser.feed(chunk))
        except SSEError:
            failures += 1
    if parser.pending.strip():
        failures += 1  # an event that never ended
    return events, failures


def audio(events: list[dict[str, Any]]) -> bytes:
    return b"".join(base64.b64decode(e["data"]) for e in events if e.get("type") == "audio_chunk")


def analyze(chunks: list[bytes]) -> Framing:
    """Where the chunk boundaries fall relative to the event boundaries, and how each consumer fares."""
    stream = b"".join(chunks)
    event_ends, pos = set(), 0
    while (found := stream.find(b"\n\n", pos)) >= 0:
        event_ends.add(found + 2)
        pos = found + 2
    offset, mid_event = 0, 0
    for chunk in chunks:
        offset += len(chunk)
        mid_event += offset not in event_ends
    naive, naive_failed = naive_events(chunks)
    buffered, buffered_failed = buffered_events(chunks)
    total = len(event_ends)
    return Framing(
        events=total,
        chunks=len(chunks),
        chunks_ending_mid_event=mid_event,
        naive_failures=naive_failed,
        naive_events=len(naive),
        buffered_failures=buffered_failed + (total - len(buffered)),
        buffered_events=len(buffered),
        audio_bytes_match=audio(buffered) == audio(_reference(stream)),
    )


def _reference(stream: bytes) -> list[dict[str, Any]]:
    """The events of the whole stream, parsed in one piece (the truth both consumers are held to)."""
    return [json.loads(record[5:]) for record in stream.split(b"\n\n") if record.startswith(b"data:")]


def responses(emu: EmulatorProcess, texts: tuple[str, ...]) -> list[list[bytes]]:
    """Each text as MP3-in-SSE through InvokeEndpointWithResponseStream: the PayloadParts as received."""
    runtime = boto3.client(
        "sagemaker-runtime",
        endpoint_url=emu.state["http_url"],
        region_name=emu.state["region"],
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=botocore.config.Config(read_timeout=120, retries={"max_attempts": 1}),
    )
    result = []
    for text in report.progress(texts, "responses"):
        response = runtime.invoke_endpoint_with_response_stream(
            EndpointName=TTS_ENDPOINT,
            ContentType="application/json",
            Body=json.dumps({"text": text, "format": "mp3", "transport": "sse"}),
        )
        chunks = []
        for event in response["Body"]:
            if "PayloadPart" not in event:
                raise RuntimeError(f"the stream broke: {event}")
            chunks.append(event["PayloadPart"]["Bytes"])
        result.append(chunks)
    return result


def plot(result: dict[str, Any], first: list[bytes]) -> report.Figure:
    fig, (layout, bars_ax) = report.figure("MP3 in SSE through a re-chunking transport", columns=2)
    # left: the first response's bytes, events as alternating bands, chunk ends as ticks
    stream = b"".join(first)
    start, shade = 0, 0
    shown = min(len(stream), 8000)
    while start < shown:
        end = stream.find(b"\n\n", start) + 2  # the stream ends with a blank line
        layout.axvspan(start, min(end, shown), 0.45, 0.95, color=["#d0e4ff", "#a8cdfa"][shade])
        start, shade = end, 1 - shade
    offset = 0
    for chunk in first:
        offset += len(chunk)
        if offset > shown:
            break
        mid = stream[offset - 2 : offset] != b"\n\n"
        layout.axvline(offset, 0.05, 0.4, color="#b00020" if mid else "#34c759", linewidth=2)
    layout.set_xlim(0, shown)
    layout.set_yticks([0.2, 0.7], ["chunk ends\n(red: mid-event)", "SSE events"])
    layout.set_ylim(0, 1)
    layout.set_xlabel("byte offset in the response (first 8 kB)")
    layout.set_title("the first response: one band per SSE event, ticks where chunks end", fontsize=10)

    totals = result["totals"]
    names = ["chunks ending\nmid-event", "naive consumer\nfailures", "buffered consumer\nfailures"]
    ours = [
        totals["chunks_ending_mid_event"] / totals["chunks"] * 100,
        result["naive_failures"] / totals["chunks"] * 100,
        result["buffered_failures"] / totals["chunks"] * 100,
    ]
    article = [ARTICLE["chunks_ending_mid_event"] / ARTICLE["chunks"] * 100, None, 0.0]
    x = range(len(names))
    bars = bars_ax.bar([i - 0.18 for i in x], ours, 0.36, color=report.OURS, label="ours")
    report.label_bars(bars_ax, bars, "{:.0f}%")
    known = [(i, v) for i, v in zip(x, article, strict=True) if v is not None]
    bars = bars_ax.bar(
        [i + 0.18 for i, _ in known],
        [v for _, v in known],
        0.36,
        color=report.ARTICLE,
        hatch="//",
        label="the article (4 events in 6 chunks, 2 mid-event)",
    )
    report.label_bars(bars_ax, bars, "{:.0f}%")
    bars_ax.set_xticks(list(x), names)
    bars_ax.set_ylabel(f"% of transport chunks (ours: {totals['chunks']} chunks, {totals['events']} events)")
    bars_ax.set_ylim(0, 110)
    bars_ax.set_title("naive = one chunk is one event; buffered = cut at the blank line", fontsize=9)
    bars_ax.legend(fontsize=8, loc="upper right")
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    texts = CLIPS[1:4] if quick else CLIPS
    env = {"EMULATOR_RECHUNK": RECHUNK, "EMULATOR_RECHUNK_SEED": RECHUNK_SEED}
    with EmulatorProcess(env=env) as emu:
        all_chunks = responses(emu, texts)
    per_response = [analyze(chunks) for chunks in all_chunks]
    totals = {
        key: sum(getattr(f, key) for f in per_response)
        for key in ("events", "chunks", "chunks_ending_mid_event", "naive_events", "buffered_events")
    }
    result = {
        "rechunk_bytes": RECHUNK,
        "responses": len(per_response),
        "totals": totals,
        "naive_failures": sum(f.naive_failures for f in per_response),
        "buffered_failures": sum(f.buffered_failures for f in per_response),
        "buffered_audio_intact": all(f.audio_bytes_match for f in per_response),
        "per_response": [f.__dict__ for f in per_response],
        "article": ARTICLE,
    }
    rows = [
        ("events", totals["events"], ARTICLE["events"]),
        ("transport chunks", totals["chunks"], ARTICLE["chunks"]),
        ("chunks ending mid-event", totals["chunks_ending_mid_event"], ARTICLE["chunks_ending_mid_event"]),
        ("naive consumer: failed chunks", result["naive_failures"], "fails"),
        ("naive consumer: events recovered", totals["naive_events"], ""),
        ("buffered consumer: failures", result["buffered_failures"], 0),
        ("buffered consumer: events recovered", totals["buffered_events"], ""),
    ]
    print(report.table([f"{len(per_response)} MP3-in-SSE responses", "ours", "article"], rows))
    return report.write(out, "framing", result, plot(result, all_chunks[0]), quick)
