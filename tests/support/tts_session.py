"""The real tts container for tests, and a client's view of one of its WebSocket sessions: every
frame in arrival order, read with a bound.

Audio frames carry no request id; each belongs to the request of the last `synthesis_start`.
Every read has a deadline, so a container that stops answering fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import websockets

from emulator.processes import child, free_port
from tests.support.paths import REPO


@dataclass(frozen=True)
class Server:
    host: str
    port: int

    @property
    def http(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://{self.host}:{self.port}/invocations-bidirectional-stream"


@contextlib.contextmanager
def tts_container(env: Mapping[str, str] | None = None) -> Iterator[tuple[Server, subprocess.Popen]]:
    """`python -m tts serve` with the real Kokoro model on a free port, ready (`/ping` 200)."""
    port = free_port()
    argv = [sys.executable, "-m", "tts", "serve", "--port", str(port), "--log-level", "warning"]
    ready = f"http://127.0.0.1:{port}/ping"
    with child(argv, env=env, ready_url=ready, timeout_s=180, cwd=REPO) as process:
        yield Server("127.0.0.1", port), process


def connect(url: str, **options: object) -> websockets.ClientConnection:
    return websockets.connect(url, max_size=None, open_timeout=30, **options)


@dataclass
class Transcript:
    """Control messages (dicts) and audio frames (bytes) in the order they arrived."""

    frames: list[dict | bytes] = field(default_factory=list)
    closed: bool = False

    def controls(self, kind: str | None = None) -> list[dict]:
        return [f for f in self.frames if isinstance(f, dict) and kind in (None, f["type"])]

    def audio(self) -> dict[str, int]:
        """Audio bytes per request id."""
        sizes: dict[str, int] = {}
        current = None
        for frame in self.frames:
            if isinstance(frame, dict) and frame["type"] == "synthesis_start":
                current = frame["request_id"]
            elif isinstance(frame, bytes):
                sizes[current] = sizes.get(current, 0) + len(frame)
        return sizes

    def audio_after(self, control: dict) -> list[bytes]:
        """The audio frames that arrived after `control` and before the next `synthesis_start`."""
        after = self.frames[self.frames.index(control) + 1 :]
        frames = []
        for frame in after:
            if isinstance(frame, dict) and frame["type"] == "synthesis_start":
                break
            if isinstance(frame, bytes):
                frames.append(frame)
        return frames


async def read_until(
    ws: websockets.ClientConnection,
    transcript: Transcript,
    done: Callable[[dict | bytes], bool],
    timeout_s: float = 180,
) -> Transcript:
    """Read frames into `transcript` until `done(frame)` holds for one of them."""
    async with asyncio.timeout(timeout_s):
        while True:
            raw = await ws.recv()
            frame = raw if isinstance(raw, bytes) else json.loads(raw)
            transcript.frames.append(frame)
            if done(frame):
                return transcript


async def close_and_drain(
    ws: websockets.ClientConnection, transcript: Transcript, timeout_s: float = 180
) -> Transcript:
    """Send `close` and read everything the container still sends until it closes normally (1000)."""
    await ws.send(json.dumps({"type": "close"}))
    try:
        await read_until(ws, transcript, lambda frame: False, timeout_s)
    except websockets.ConnectionClosedOK:
        transcript.closed = ws.close_code == 1000
    return transcript


def is_control(kind: str, request_id: str | None = None) -> Callable[[dict | bytes], bool]:
    return lambda frame: (
        isinstance(frame, dict) and frame["type"] == kind and request_id in (None, frame.get("request_id"))
    )
