"""Pieces the emulator and agent reliability tests share: requests signed (or mis-signed) by
botocore's own SigV4 signer and sent raw over HTTP/1.1 or HTTP/2, event-stream envelopes, and a
line of output per case (`pytest -rP` shows them)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import psutil
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from emulator.server import Emulator, emulator_in_thread
from emulator.wire import eventstream
from emulator.wire.sigv4 import STREAMING_EVENTS
from tests.emulator.support import (
    bidi_client,
    endpoint,
    fast_config,
    manifest,
    model,
    next_part,
    open_stream,
    part,
    variant,
)

BIDI_PATH = "/endpoints/{name}/invocations-bidirectional-stream"


def say(tried: str, happened: str) -> None:
    """One line per case: what was tried and what happened."""
    print(f"TRIED {tried:<60} -> {happened}")


def sign(
    method: str,
    url: str,
    body: bytes,
    *,
    key: str,
    secret: str,
    service: str,
    region: str = "us-east-1",
    headers: dict[str, str] | None = None,
    at: datetime.datetime | None = None,
) -> dict[str, str]:
    """The headers botocore's SigV4 signer puts on this request (signed at `at`, default now)."""
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
    signer = SigV4Auth(Credentials(key, secret), service, region)
    if at is None:
        signer.add_auth(request)
    else:
        with mock.patch("botocore.auth.get_current_datetime", return_value=at):
            signer.add_auth(request)
    return dict(request.headers.items())


@dataclass
class RawAnswer:
    status: int
    headers: httpx.Headers
    body: bytes
    http_version: str
    events: list[eventstream.Message] = field(default_factory=list)

    @property
    def error_type(self) -> str | None:
        return (self.headers.get("x-amzn-errortype") or "").split(":")[0] or None

    def describe(self) -> str:
        if self.events:
            kinds: list[list] = []
            for event in self.events:
                kind = event.exception_type or event.event_type
                if kinds and kinds[-1][0] == kind:
                    kinds[-1][1] += 1
                else:
                    kinds.append([kind, 1])
            listed = ", ".join(f"{kind} x{n}" if n > 1 else str(kind) for kind, n in kinds)
            return f"{self.status} {self.http_version}, events [{listed}]"
        return f"{self.status} {self.error_type or ''} {self.body[:100]!r}"


def envelope(inner: bytes, signature: bytes | None = None) -> bytes:
    """A client event as the official client frames it: the inner message in a signing envelope."""
    headers: dict[str, eventstream.HeaderValue] = {":date": datetime.datetime.now(datetime.UTC)}
    if signature is not None:
        headers[":chunk-signature"] = signature
    return eventstream.encode(headers, inner)


def payload_part(data: bytes, **headers: str) -> bytes:
    return eventstream.event("PayloadPart", data, content_type="application/octet-stream", **headers)


async def post(
    emu: Emulator,
    path: str,
    body: bytes | Iterable[bytes],
    headers: dict[str, str],
    *,
    http2: bool = False,
    timeout_s: float = 20.0,
    linger_s: float = 0.0,
) -> RawAnswer:
    """POST raw bytes to the emulator: HTTP/1.1 on its plain listener or HTTP/2 on its TLS one.

    `linger_s`: wait that long before ending the body (END_STREAM), so an echo can come back first.
    """
    chunks = [body] if isinstance(body, bytes) else list(body)

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        await asyncio.sleep(linger_s)

    base = emu.h2_url if http2 else emu.http_url
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(emu.tls.ca)) if http2 else False
    async with httpx.AsyncClient(http2=http2, verify=verify, trust_env=False, timeout=timeout_s) as client:
        response = await client.post(f"{base}{path}", content=stream(), headers=headers)
    answer = RawAnswer(response.status_code, response.headers, response.content, response.http_version)
    if response.headers.get("content-type", "").startswith("application/vnd.amazon.eventstream"):
        answer.events = eventstream.Decoder().feed(response.content)
    return answer


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


BEDROCK_MODEL_ID = "global.anthropic.claude-sonnet-4-6"
"""A model ID Bedrock knows (the agent's default), for the requests that must reach the model."""


def converse_body(text: str = "Hi") -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": [{"text": text}]}]}).encode()


STREAMING_HEADERS = {
    "content-type": "application/vnd.amazon.eventstream",
    "x-amz-content-sha256": STREAMING_EVENTS,
}


def listening_ports(pids: Iterable[int]) -> dict[int, list[int]]:
    """pid -> the TCP ports it listens on."""
    out: dict[int, list[int]] = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            conns = psutil.Process(pid).net_connections(kind="tcp")
            out[pid] = sorted({c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN})
    return out


def port_free(port: int) -> bool:
    """Nobody listens on it (connections it served may linger in TIME_WAIT; that is not holding it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
    return True


def stops_everything(process: subprocess.Popen, sig: int, timeout_s: float) -> str:
    """Send `sig` to `process` (not its group: only what it does itself counts); wait for it to exit and
    for everything it started to be gone and its ports free. Returns a line saying what happened."""
    children = [p.pid for p in psutil.Process(process.pid).children(recursive=True)]
    ports = listening_ports([process.pid, *children])
    assert children, "the entry point started nothing"
    process.send_signal(sig)
    process.wait(timeout_s)
    deadline = time.monotonic() + 10
    alive = children
    while time.monotonic() < deadline:
        alive = [
            pid for pid in children if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
        ]
        busy = [port for pids in ports.values() for port in pids if not port_free(port)]
        if not alive and not busy:
            return f"exit {process.returncode}; stopped {len(children)} children; released ports {ports}"
        time.sleep(0.2)
    for pid in alive:  # do not leave them behind for the next test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    raise AssertionError(f"after {signal.Signals(sig).name}: children still running {alive}, ports {ports}")


@contextlib.contextmanager
def empty_emulator(home: Path) -> Iterator[Emulator]:
    """An emulator with no resources (compose/empty.yaml's manifest): it starts in about a second."""
    with emulator_in_thread(fast_config(home), manifest([])) as running:
        yield running


@contextlib.contextmanager
def echo_emulator(home: Path, replicas: int = 1, **overrides: Any) -> Iterator[Emulator]:
    """An emulator (fast test settings plus `overrides`) with one endpoint `echo` of echo containers."""
    resources = [
        model("echo", "echo:latest"),
        *endpoint("echo", [variant("AllTraffic", "echo", count=replicas)]),
    ]
    with emulator_in_thread(fast_config(home, **overrides), manifest(resources)) as running:
        yield running


async def open_echoing(emu: Emulator, key: str = "test", secret: str = "test"):
    """A bidirectional session on `echo` through the official client, one message already echoed."""
    client = await bidi_client(emu, key, secret)
    stream = await open_stream(client, "echo")
    await stream.input_stream.send(part(b"before", "UTF8"))
    _, events = await stream.await_output()
    assert (await next_part(events)).bytes_ == b"before"
    return stream, events
