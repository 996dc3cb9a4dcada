"""`emulator`: what the emulator adds to a message round trip, and whether it holds up under load.

1. Round trip per message on one session: the official HTTP/2 client through the emulator (TLS h2 ->
   event stream -> WebSocket -> echo container) vs a plain WebSocket client straight to the same echo
   replica. Target: at most 2 ms added at the median on loopback.
2. 50 concurrent sessions through the emulator, each sending and awaiting messages back to back, for
   60 s (5 s with --quick): messages, errors (target: 0) and latency under load.

No model is involved (the echo container answers each frame with itself), so this is the emulator's
own cost.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import websockets
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
)

from benchmarks import report
from benchmarks.emulated import EmulatorProcess
from benchmarks.stats import summarize

TARGET_ADDED_MEDIAN_MS = 2.0
ENDPOINT = "bench-echo"
PAYLOAD_BYTES = 64
MANIFEST = {
    "resources": [
        {"kind": "Model", "spec": {"ModelName": ENDPOINT, "PrimaryContainer": {"Image": "echo:latest"}}},
        {
            "kind": "EndpointConfig",
            "spec": {
                "EndpointConfigName": ENDPOINT,
                "ProductionVariants": [
                    {
                        "VariantName": "AllTraffic",
                        "ModelName": ENDPOINT,
                        "InstanceType": "ml.g5.xlarge",
                        "InitialInstanceCount": 1,
                    }
                ],
            },
        },
        {"kind": "Endpoint", "spec": {"EndpointName": ENDPOINT, "EndpointConfigName": ENDPOINT}},
    ]
}


class EchoSession:
    """One bidirectional session through the emulator: send one part, await its echo."""

    def __init__(self, client: AsyncSageMakerRuntimeHTTP2Client) -> None:
        self.client = client

    async def open(self, payload: bytes) -> None:
        self.stream = await self.client.invoke_endpoint_with_bidirectional_stream(
            InvokeEndpointWithBidirectionalStreamInput(endpoint_name=ENDPOINT)
        )
        await self.stream.input_stream.send(
            RequestStreamEventPayloadPart(value=RequestPayloadPart(bytes_=payload))
        )
        _, self.events = await self.stream.await_output()
        await self.events.receive()

    async def round_trip(self, payload: bytes) -> bytes:
        await self.stream.input_stream.send(
            RequestStreamEventPayloadPart(value=RequestPayloadPart(bytes_=payload))
        )
        event = await self.events.receive()
        return event.value.bytes_ if event is not None else b""

    async def close(self) -> None:
        """End the input, then read the response to its end before closing: closing a stream whose
        response is still open makes the CRT client write END_STREAM to a completed stream."""
        await self.stream.input_stream.close()
        async with asyncio.timeout(10):
            while await self.events.receive() is not None:
                pass
        await self.stream.close()


async def _timed(
    count: int, warmup: int, call: Callable[[], Awaitable[bytes]], payload: bytes, label: str
) -> list[float]:
    samples = []
    for index in report.progress(range(warmup + count), label):
        started = time.perf_counter()
        answer = await call()
        elapsed = time.perf_counter() - started
        if answer != payload:
            raise RuntimeError(f"echo mismatch: sent {len(payload)} bytes, got {len(answer)}")
        if index >= warmup:
            samples.append(elapsed * 1000)
    return samples


async def round_trips(emu: EmulatorProcess, messages: int, warmup: int, payload: bytes) -> dict[str, Any]:
    uri = f"ws://127.0.0.1:{emu.replica_port()}/invocations-bidirectional-stream"
    async with websockets.connect(uri, max_size=None, ping_interval=None, compression=None) as ws:

        async def direct() -> bytes:
            await ws.send(payload)
            return await ws.recv(decode=False)

        direct_ms = await _timed(messages, warmup, direct, payload, "direct WebSocket")
    session = EchoSession(await emu.client())
    await session.open(payload)
    emulated_ms = await _timed(
        messages, warmup, lambda: session.round_trip(payload), payload, "through the emulator"
    )
    await session.close()
    direct, emulated = summarize(direct_ms), summarize(emulated_ms)
    added = round(emulated["median_ms"] - direct["median_ms"], 3)
    return {
        "direct_websocket": direct | {"all": [round(v, 3) for v in direct_ms]},
        "through_emulator": emulated | {"all": [round(v, 3) for v in emulated_ms]},
        "added_median_ms": added,
        "target_added_median_ms": TARGET_ADDED_MEDIAN_MS,
        "meets_target": added <= TARGET_ADDED_MEDIAN_MS,
    }


async def concurrency(
    emu: EmulatorProcess, sessions: int, duration_s: float, payload: bytes
) -> dict[str, Any]:
    client = await emu.client()
    samples: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + duration_s

    async def one(index: int) -> None:
        session = EchoSession(client)
        try:
            await session.open(payload)
            while time.monotonic() < deadline:
                started = time.perf_counter()
                async with asyncio.timeout(10):
                    answer = await session.round_trip(payload)
                if answer != payload:
                    errors.append(f"session {index}: echo mismatch")
                    return
                samples.append((time.perf_counter() - started) * 1000)
            await session.close()
        except Exception as exc:
            errors.append(f"session {index}: {type(exc).__name__}: {exc}")

    print(f"holding {sessions} sessions for {duration_s:g} s ...", flush=True)
    await asyncio.gather(*(one(i) for i in range(sessions)))
    return {
        "sessions": sessions,
        "duration_s": duration_s,
        "messages": len(samples),
        "errors": len(errors),
        "error_samples": errors[:5],
        "messages_per_s": round(len(samples) / duration_s, 1),
        "latency": summarize(samples),
        "meets_target": not errors,
    }


def plot(result: dict[str, Any]) -> report.Figure:
    rt, load = result["round_trip"], result["concurrency"]
    fig, (left, right) = report.figure("What the emulator adds (echo container, no model)", columns=2)
    for name, label, color in (
        ("direct_websocket", "plain WebSocket, straight to the replica", report.ARTICLE),
        ("through_emulator", "official HTTP/2 client through the emulator", report.OURS),
    ):
        values = np.sort(rt[name]["all"])
        left.plot(values, np.arange(1, len(values) + 1) / len(values), color=color, label=label)
    target = rt["direct_websocket"]["median_ms"] + TARGET_ADDED_MEDIAN_MS
    left.axvline(
        target, color="#b00020", linestyle=":", label=f"target: direct median + {TARGET_ADDED_MEDIAN_MS:g} ms"
    )
    left.set_xscale("log")
    left.set_xlabel("round trip of one 64-byte message (ms, log scale)")
    left.set_ylabel("fraction of messages at or below")
    left.set_title(f"one session: +{rt['added_median_ms']:.2f} ms at the median", fontsize=10)
    left.legend(fontsize=8, loc="lower right")
    lat = load["latency"]
    keys = ("median_ms", "p90_ms", "p99_ms")
    bars = right.bar(["median", "p90", "p99"], [lat.get(k, 0) for k in keys], color=report.OURS)
    report.label_bars(right, bars, "{:.1f}")
    right.set_ylabel("round trip under load (ms)")
    right.set_title(
        f"{load['sessions']} sessions x {load['duration_s']:g} s: {load['messages']:,} messages, "
        f"{load['errors']} errors",
        fontsize=10,
    )
    return fig


def run(quick: bool, out: Path) -> dict[str, Any]:
    messages, warmup, duration = (200, 20, 5.0) if quick else (1000, 50, 60.0)
    payload = os.urandom(PAYLOAD_BYTES)

    async def measure() -> dict[str, Any]:
        with EmulatorProcess(MANIFEST) as emu:
            return {
                "payload_bytes": PAYLOAD_BYTES,
                "round_trip": await round_trips(emu, messages, warmup, payload),
                "concurrency": await concurrency(emu, 50, duration, payload),
            }

    result = asyncio.run(measure())
    rt, load = result["round_trip"], result["concurrency"]
    rows = [
        (name.replace("_", " "), rt[name]["median_ms"], rt[name]["p90_ms"], rt[name]["p99_ms"])
        for name in ("direct_websocket", "through_emulator")
    ]
    print(report.table(["round trip (ms)", "median", "p90", "p99"], rows))
    print(
        f"added at the median: {rt['added_median_ms']:.3f} ms (target <= {TARGET_ADDED_MEDIAN_MS:g} ms: "
        f"{'met' if rt['meets_target'] else 'MISSED'})\n"
        f"{load['sessions']} sessions x {load['duration_s']:g} s: {load['messages']:,} messages, "
        f"{load['errors']} errors (target 0: {'met' if load['meets_target'] else 'MISSED'})"
    )
    return report.write(out, "emulator", result, plot(result), quick)
