"""`openai_speech`: OpenAI's streamed pcm against our own sessions, for the same text. Time to first
audio byte of `audio.speech.with_streaming_response.create(response_format="pcm")` (OpenAI's own
`AsyncOpenAI` at the gateway's `/v1`, `python -m gateway` in front of the emulator as in front of AWS:
boto3's InvokeEndpointWithResponseStream) vs our session through the emulator's bidirectional stream
(the official HTTP/2 client, the agent's path) and vs the container's WebSocket reached directly.

Each trial times a fresh request or session from the call that opens it to the first audio byte, so
both sides pay their connection setup; trials rotate the order of the three so that machine noise hits
each alike. The target: OpenAI's first byte within TARGET_MS of our bidirectional stream's, median of
the trial-by-trial differences.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import openai
import yaml

from benchmarks import report
from benchmarks.emulated import EmulatorProcess
from benchmarks.texts import FIRST_SENTENCE
from emulator.manifest import DEFAULT_MANIFEST
from facts import DEFAULT_VOICE, TTS_ENDPOINT
from local_stack.stack import openai_gateway
from tools import tts_client
from tools.tts_client import connect, open_endpoint

TARGET_MS = 50.0
CASES = ("openai_pcm", "bidi", "websocket")
LABELS = {
    "openai_pcm": "OpenAI client, pcm stream\n(gateway /v1 -> response stream)",
    "bidi": "our session, bidi stream\n(emulator HTTP/2 -> WebSocket)",
    "websocket": "our session, the container's\nWebSocket directly",
}


def _speech_only_manifest() -> dict[str, Any]:
    """The default manifest's Kokoro endpoint and its images, nothing else (no agent beside the
    measurement)."""
    default = yaml.safe_load(DEFAULT_MANIFEST.read_text())
    return {
        "images": default["images"],
        "resources": [r for r in default["resources"] if r["kind"] != "AgentRuntime"],
    }


def _message(text: str) -> dict[str, Any]:
    return {"text": text, "request_id": uuid.uuid4().hex[:12], "voice": DEFAULT_VOICE, "format": "pcm"}


async def _first_audio_ms(channel: tts_client.Channel, text: str, since: float) -> float:
    transcript = await tts_client.speak(channel, [_message(text)])
    arrivals = transcript.arrivals(since)
    if not arrivals:
        raise RuntimeError("the session ended without audio")
    return arrivals[0].at_s * 1000


async def measure(trials: int, text: str) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    with (
        EmulatorProcess(_speech_only_manifest()) as emu,
        openai_gateway(emu.state["env"], emu.home) as openai_url,
    ):
        bidi_client = await emu.client()
        ws_url = f"ws://127.0.0.1:{emu.replica_port()}/invocations-bidirectional-stream"
        speech = openai.AsyncOpenAI(base_url=openai_url, api_key="unused", max_retries=0)

        async def openai_pcm() -> float:
            since = time.perf_counter()
            async with speech.audio.speech.with_streaming_response.create(
                model="tts-1", voice=DEFAULT_VOICE, input=text, response_format="pcm"
            ) as response:
                first = None
                async for chunk in response.iter_bytes():
                    if chunk and first is None:
                        first = (time.perf_counter() - since) * 1000
            if first is None:
                raise RuntimeError("the OpenAI route answered no audio")
            return first

        async def bidi() -> float:
            since = time.perf_counter()
            async with open_endpoint(bidi_client, TTS_ENDPOINT) as channel:
                return await _first_audio_ms(channel, text, since)

        async def websocket() -> float:
            since = time.perf_counter()
            async with connect(ws_url) as channel:
                return await _first_audio_ms(channel, text, since)

        runs = {"openai_pcm": openai_pcm, "bidi": bidi, "websocket": websocket}
        for case in CASES:  # warm-up: connections, first-call paths in the container
            await runs[case]()
        for n in report.progress(range(trials), "trials (each case once)"):
            order = CASES[n % len(CASES) :] + CASES[: n % len(CASES)]
            for case in order:
                samples[case].append(round(await runs[case](), 1))
        await speech.close()
    return samples


def plot(result: dict[str, Any]) -> report.Figure:
    fig, (ax, diff) = report.figure(
        "First audio byte: OpenAI's pcm stream vs our sessions, same text", columns=2
    )
    medians = [result["median_ms"][case] for case in CASES]
    bars = ax.bar(range(len(CASES)), medians, 0.55, color=report.OURS, label="median")
    report.label_bars(ax, bars, "{:.0f}")
    for position, case in enumerate(CASES):
        trials = result["trials_ms"][case]
        ax.scatter([position] * len(trials), trials, color="black", s=10, zorder=3)
    ax.set_xticks(range(len(CASES)), [LABELS[case] for case in CASES], fontsize=7)
    ax.set_ylabel("time to first audio byte (ms)")
    ax.set_title("each trial a fresh request or session (dots)", fontsize=10)
    deltas = result["openai_minus_bidi_ms"]
    diff.bar(range(len(deltas)), deltas, color=report.OURS)
    report.reference_line(diff, TARGET_MS, f"target: within {TARGET_MS:.0f} ms", color="tab:red")
    report.reference_line(diff, -TARGET_MS, "", color="tab:red")
    diff.set(xlabel="trial", ylabel="OpenAI pcm - bidi (ms)", title="trial by trial")
    diff.legend(fontsize=8)
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    trials = 4 if quick else 12
    samples = asyncio.run(measure(trials, FIRST_SENTENCE))
    deltas = [round(o - b, 1) for o, b in zip(samples["openai_pcm"], samples["bidi"], strict=True)]
    median_delta = round(statistics.median(deltas), 1)
    result = {
        "trials": trials,
        "text": FIRST_SENTENCE,
        "median_ms": {case: round(statistics.median(values), 1) for case, values in samples.items()},
        "trials_ms": samples,
        "openai_minus_bidi_ms": deltas,
        "median_openai_minus_bidi_ms": median_delta,
        "median_openai_minus_websocket_ms": round(
            statistics.median(
                o - w for o, w in zip(samples["openai_pcm"], samples["websocket"], strict=True)
            ),
            1,
        ),
        "target_ms": TARGET_MS,
        "within_target": abs(median_delta) <= TARGET_MS,
    }
    rows = [(case, result["median_ms"][case], min(samples[case]), max(samples[case])) for case in CASES]
    rows.append(("OpenAI - bidi (median of pairs)", median_delta, min(deltas), max(deltas)))
    rows.append(("OpenAI - websocket (median of pairs)", result["median_openai_minus_websocket_ms"], "", ""))
    print(report.table(["first audio byte (ms)", "median", "min", "max"], rows))
    print(
        f"target: OpenAI within {TARGET_MS:.0f} ms of bidi: {'met' if result['within_target'] else 'MISSED'}"
    )
    return report.write(out, "openai_speech", result, plot(result), quick)
