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
from emulator.server import Emulator
from facts import STT_PCM_BYTES_PER_S
from tests.emulator.support import bidi_client, next_part, open_stream, part
from tests.support.paths import REPO
from tests.support.tts_container import Server

FRAME_BYTES = STT_PCM_BYTES_PER_S // 10  # 100 ms of audio, as a browser's audio worklet batches it
NO_GPU = "STT_DEVICE=cuda, but CTranslate2 sees no CUDA device"
"""How the container refuses to start Whisper on a GPU it does not have (stt/engines/whisper.py)."""


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


async def through_endpoint(emu: Emulator, endpoint: str, pcm: bytes, *, within_s: float = 60) -> list[dict]:
    """`pcm` streamed into an emulated STT endpoint through the official HTTP/2 client, in 100 ms BINARY
    parts paced at real time, then `end`: every message that comes back (each a UTF8 part)."""
    client = await bidi_client(emu)
    stream = await open_stream(client, endpoint)
    got: list[dict] = []

    async def read() -> None:
        output, events = await stream.await_output()
        assert output.invoked_production_variant == "AllTraffic"
        while (event := await next_part(events, within_s=within_s)) is not None:
            assert event.data_type == "UTF8", event
            got.append(json.loads(event.bytes_))

    reader = asyncio.create_task(read())
    try:
        for start in range(0, len(pcm), FRAME_BYTES):
            await stream.input_stream.send(part(pcm[start : start + FRAME_BYTES]))
            await asyncio.sleep(0.1)
        await stream.input_stream.send(part(b'{"type": "end"}', data_type="UTF8"))
        await asyncio.wait_for(reader, within_s)
    finally:
        reader.cancel()
        await stream.close()
    return got
