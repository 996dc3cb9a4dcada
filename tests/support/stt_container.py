"""The real speech-to-text container for tests: `python -m stt serve` on a free port, ready, and a small
WebSocket client that streams PCM in frames and collects what comes back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping

import websockets

from emulator.processes import child, free_port
from facts import STT_PCM_BYTES_PER_S
from tests.support.paths import REPO
from tests.support.tts_container import Server

FRAME_BYTES = STT_PCM_BYTES_PER_S // 10  # 100 ms of audio, as a browser's audio worklet batches it


@contextlib.contextmanager
def stt_container(env: Mapping[str, str] | None = None) -> Iterator[Server]:
    port = free_port()
    argv = [sys.executable, "-m", "stt", "serve", "--port", str(port), "--log-level", "warning"]
    with child(argv, env=env, ready_url=f"http://127.0.0.1:{port}/ping", timeout_s=180, cwd=REPO):
        yield Server("127.0.0.1", port)


def silence(seconds: float) -> bytes:
    return b"\x00\x00" * round(seconds * STT_PCM_BYTES_PER_S / 2)


async def stream(
    server: Server, pcm: bytes, *, realtime: bool, before: list[str] = (), within_s: float = 60
) -> list[dict]:
    """Send `before` (TEXT frames), then `pcm` in 100 ms BINARY frames (paced at real time or at once),
    then `end`; every JSON message until the container closes the stream."""
    got: list[dict] = []
    async with asyncio.timeout(within_s), websockets.connect(server.ws) as ws:

        async def receive() -> None:
            with contextlib.suppress(websockets.ConnectionClosedOK):
                async for message in ws:
                    got.append(json.loads(message))

        reader = asyncio.create_task(receive())
        for text in before:
            await ws.send(text)
        for start in range(0, len(pcm), FRAME_BYTES):
            await ws.send(pcm[start : start + FRAME_BYTES])
            if realtime:
                await asyncio.sleep(0.1)
        await ws.send(json.dumps({"type": "end"}))
        await reader
    return got
