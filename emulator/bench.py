"""`python -m emulator.bench`: what the emulator adds to a message round trip, and whether it holds
up under concurrent sessions.

1. Round trip per message, one session, `--messages` messages: the official HTTP/2 client through
   the emulator (TLS h2 -> event stream -> WebSocket -> echo container) vs a plain WebSocket client
   straight to the same echo replica. Reports median/p90/p99 of both and the added median
   (target: <= 2 ms on loopback).
2. `--sessions` concurrent sessions for `--duration` seconds through the emulator, each sending and
   awaiting messages back to back: messages, errors (target: 0) and latency under load.

The emulator runs as its own process (`python -m emulator up`), as users run it, so the client and
the server do not share an interpreter. Results are printed and written as JSON (`--out`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import websockets
import yaml
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
)
from smithy_aws_core.identity import AWSCredentialsIdentity

from agent.config import AgentConfig
from agent.sagemaker_client import bidirectional_client
from emulator.cli import wait_ready
from emulator.config import EmulatorConfig
from emulator.processes import stop_group
from emulator.stats import summarize

TARGET_ADDED_MEDIAN_MS = 2.0
ENDPOINT = "bench-echo"
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


def summary(samples_s: list[float]) -> dict[str, float]:
    return summarize([s * 1000 for s in samples_s])


class EmulatorProcess:
    """`python -m emulator up` on free ports with the echo manifest, in a scratch home."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="emulator-bench-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.state: dict[str, Any] = {}

    def __enter__(self) -> EmulatorProcess:
        manifest = self.home / "bench.yaml"
        manifest.write_text(yaml.safe_dump(MANIFEST))
        env = {
            **os.environ,
            "EMULATOR_HOME": str(self.home),
            "EMULATOR_HTTP_PORT": "0",
            "EMULATOR_H2_PORT": "0",
            "EMULATOR_STOP_GRACE_S": "2",
            "EMULATOR_LLM_BACKEND": "script",  # no model loading beside the measurement
        }
        log_path = self.home / "emulator.log"
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "emulator", "up", "-f", str(manifest)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        self.state = wait_ready(EmulatorConfig(home=self.home), self.process, log_path, timeout_s=120)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            stop_group(self.process, grace_s=30)

    def replica_port(self) -> int:
        status = httpx.get(f"{self.state['http_url']}/_emulator/status", trust_env=False).json()
        return int(status["endpoints"][0]["replicas"][0]["port"])


async def _client(state: dict[str, Any]) -> AsyncSageMakerRuntimeHTTP2Client:
    config = AgentConfig(
        region=state["region"], sagemaker_http2_endpoint=state["h2_url"], ca_bundle=state["ca"]
    )
    return await bidirectional_client(
        config, AWSCredentialsIdentity(access_key_id="bench", secret_access_key="bench")
    )


class Session:
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
        await self.stream.input_stream.close()
        await self.stream.close()


async def _timed(
    count: int, warmup: int, call: Callable[[], Awaitable[bytes]], payload: bytes
) -> list[float]:
    samples = []
    for index in range(warmup + count):
        started = time.perf_counter()
        answer = await call()
        elapsed = time.perf_counter() - started
        if answer != payload:
            raise RuntimeError(f"echo mismatch: sent {len(payload)} bytes, got {len(answer)}")
        if index >= warmup:
            samples.append(elapsed)
    return samples


async def round_trips(emu: EmulatorProcess, messages: int, warmup: int, payload: bytes) -> dict[str, Any]:
    uri = f"ws://127.0.0.1:{emu.replica_port()}/invocations-bidirectional-stream"
    async with websockets.connect(uri, max_size=None, ping_interval=None, compression=None) as ws:

        async def direct() -> bytes:
            await ws.send(payload)
            return await ws.recv(decode=False)

        direct_samples = await _timed(messages, warmup, direct, payload)
    session = Session(await _client(emu.state))
    await session.open(payload)
    emulated_samples = await _timed(messages, warmup, lambda: session.round_trip(payload), payload)
    await session.close()
    direct_stats, emulated_stats = summary(direct_samples), summary(emulated_samples)
    added = emulated_stats["median_ms"] - direct_stats["median_ms"]
    return {
        "direct_websocket": direct_stats,
        "through_emulator": emulated_stats,
        "added_median_ms": added,
        "target_added_median_ms": TARGET_ADDED_MEDIAN_MS,
        "meets_target": added <= TARGET_ADDED_MEDIAN_MS,
    }


async def concurrency(
    emu: EmulatorProcess, sessions: int, duration_s: float, payload: bytes
) -> dict[str, Any]:
    client = await _client(emu.state)
    samples: list[float] = []
    errors: list[str] = []
    messages = 0
    deadline = time.monotonic() + duration_s

    async def one(index: int) -> None:
        nonlocal messages
        session = Session(client)
        try:
            await session.open(payload)
            while time.monotonic() < deadline:
                started = time.perf_counter()
                async with asyncio.timeout(10):
                    answer = await session.round_trip(payload)
                if answer != payload:
                    errors.append(f"session {index}: echo mismatch")
                    return
                samples.append(time.perf_counter() - started)
                messages += 1
            await session.close()
        except Exception as exc:
            errors.append(f"session {index}: {type(exc).__name__}: {exc}")

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return {
        "sessions": sessions,
        "duration_s": duration_s,
        "messages": messages,
        "errors": len(errors),
        "error_samples": errors[:5],
        "messages_per_s": messages / duration_s,
        "latency": summary(samples),
        "meets_target": not errors,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    payload = os.urandom(args.payload_bytes)
    with EmulatorProcess() as emu:
        result = {
            "payload_bytes": args.payload_bytes,
            "round_trip": await round_trips(emu, args.messages, args.warmup, payload),
            "concurrency": await concurrency(emu, args.sessions, args.duration, payload),
        }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="round trips per path (default 1000)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--payload-bytes", type=int, default=64)
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions (default 50)")
    parser.add_argument(
        "--duration", type=float, default=60.0, help="seconds of concurrent load (default 60)"
    )
    parser.add_argument("--out", default="out/emulator-bench.json")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    rt, load = result["round_trip"], result["concurrency"]
    print(f"round trip, {args.messages} messages of {args.payload_bytes} B:")
    for name in ("direct_websocket", "through_emulator"):
        stats = rt[name]
        print(
            f"  {name:18} median {stats['median_ms']:.3f} ms  p90 {stats['p90_ms']:.3f} ms  "
            f"p99 {stats['p99_ms']:.3f} ms"
        )
    print(
        f"  added at the median: {rt['added_median_ms']:.3f} ms (target <= {TARGET_ADDED_MEDIAN_MS} ms: "
        f"{'met' if rt['meets_target'] else 'MISSED'})"
    )
    print(
        f"{load['sessions']} concurrent sessions for {load['duration_s']:g} s: {load['messages']} messages, "
        f"{load['errors']} errors (target 0: {'met' if load['meets_target'] else 'MISSED'}), "
        f"median {load['latency'].get('median_ms', float('nan')):.2f} ms"
    )
    print(f"written to {out}")
    return 0 if rt["meets_target"] and load["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
