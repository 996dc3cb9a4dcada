"""A client's view of one session with the tts container: the one loop that sends messages and reads
every control frame and audio frame, each with its arrival time, every read bounded. The benchmarks and
the tests use it on either transport:

- `WebSocketChannel`: the container's WebSocket directly (`connect(url)`);
- `EndpointChannel`: the SageMaker bidirectional stream through the official client, as the agent
  speaks it (`agent.tts_session.TTSSession`), locally through the emulator or on AWS.

Audio frames carry no request id; each belongs to the request of the last `synthesis_start`. A deadline
bounds every read, so a container that stops answering fails the caller instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import websockets
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client

from agent.endpoint_stream import Audio
from agent.tts_session import TTSSession
from facts import PCM_BYTES_PER_S
from tools.listener import Arrival

Frame = dict[str, Any] | bytes
READ_TIMEOUT_S = 180.0


class SessionEnded(Exception):
    """The container ended the session; `normal` when it closed as asked (WebSocket 1000, or the
    stream's end)."""

    def __init__(self, normal: bool) -> None:
        super().__init__("the session ended" + ("" if normal else " abnormally"))
        self.normal = normal


class ContainerError(RuntimeError):
    """The container answered a request with an `error` frame."""


class Channel(Protocol):
    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        """One message: a dict as JSON, a str or bytes as the frame itself."""

    async def receive(self) -> Frame:
        """The next frame, a control message (dict) or audio (bytes); SessionEnded once it is over."""

    async def close(self) -> None:
        """Ask the container to end the session once everything queued is sent (`{"type": "close"}`)."""


class WebSocketChannel:
    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        await self.ws.send(json.dumps(message) if isinstance(message, dict) else message)

    async def receive(self) -> Frame:
        try:
            raw = await self.ws.recv()
        except websockets.ConnectionClosed:
            raise SessionEnded(self.ws.close_code == 1000) from None
        return raw if isinstance(raw, bytes) else json.loads(raw)

    async def close(self) -> None:
        await self.send({"type": "close"})


class EndpointChannel:
    def __init__(self, session: TTSSession) -> None:
        self.session = session
        self._chunks = session.chunks()

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        if not isinstance(message, dict):
            raise TypeError("the SageMaker stream carries JSON messages: send a dict")
        await self.session.send(message)

    async def receive(self) -> Frame:
        try:
            chunk = await anext(self._chunks)
        except StopAsyncIteration:
            raise SessionEnded(True) from None
        return chunk.data if isinstance(chunk, Audio) else chunk.message

    async def close(self) -> None:
        await self.session.finish()


@contextlib.asynccontextmanager
async def connect(url: str, **options: Any) -> AsyncIterator[WebSocketChannel]:
    """A WebSocket session to the container at `url` (its `/invocations-bidirectional-stream`)."""
    async with websockets.connect(url, max_size=None, open_timeout=30, **options) as ws:
        yield WebSocketChannel(ws)


@contextlib.asynccontextmanager
async def open_endpoint(
    client: AsyncSageMakerRuntimeHTTP2Client, endpoint_name: str
) -> AsyncIterator[EndpointChannel]:
    """A session to the SageMaker endpoint `endpoint_name` through the official client."""
    async with await TTSSession.open(client, endpoint_name) as session:
        yield EndpointChannel(session)


@dataclass(frozen=True)
class Received:
    at_s: float  # time.perf_counter() when it arrived
    frame: Frame


@dataclass
class Transcript:
    """Control messages (dicts) and audio frames (bytes) in the order they arrived, with their times."""

    received: list[Received] = field(default_factory=list)
    closed: bool = False

    @property
    def frames(self) -> list[Frame]:
        return [r.frame for r in self.received]

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

    def pcm(self) -> bytes:
        return b"".join(f for f in self.frames if isinstance(f, bytes))

    def arrivals(self, since: float) -> list[Arrival]:
        """Each PCM frame as a listener gets it (`tools.listener`): seconds from `since`, seconds long."""
        return [
            Arrival(r.at_s - since, len(r.frame) / PCM_BYTES_PER_S)
            for r in self.received
            if isinstance(r.frame, bytes)
        ]

    def first(self, done: Callable[[Frame], bool]) -> Received:
        """The first frame for which `done` holds."""
        return next(r for r in self.received if done(r.frame))


async def read_until(
    channel: Channel, transcript: Transcript, done: Callable[[Frame], bool], timeout_s: float = READ_TIMEOUT_S
) -> Transcript:
    """Read frames into `transcript` until `done(frame)` holds for one of them."""
    async with asyncio.timeout(timeout_s):
        while True:
            frame = await channel.receive()
            transcript.received.append(Received(time.perf_counter(), frame))
            if done(frame):
                return transcript


async def close_and_drain(
    channel: Channel, transcript: Transcript, timeout_s: float = READ_TIMEOUT_S
) -> Transcript:
    """Send `close` and read everything the container still sends until it ends the session; `closed`
    says whether it ended it normally."""
    await channel.close()
    try:
        await read_until(channel, transcript, lambda frame: False, timeout_s)
    except SessionEnded as ended:
        transcript.closed = ended.normal
    return transcript


def is_control(kind: str, request_id: str | None = None) -> Callable[[Frame], bool]:
    return lambda frame: (
        isinstance(frame, dict) and frame["type"] == kind and request_id in (None, frame.get("request_id"))
    )


async def speak(
    channel: Channel, messages: list[dict[str, Any]], timeout_s: float = READ_TIMEOUT_S
) -> Transcript:
    """Send every message at once (as a voice agent sends sentences), read until each one's
    `synthesis_complete`, then close and drain. An `error` frame raises ContainerError."""
    transcript = Transcript()
    for message in messages:
        await channel.send(message)
    done = 0

    def counted(frame: Frame) -> bool:
        nonlocal done
        if isinstance(frame, dict) and frame["type"] == "error":
            raise ContainerError(f"{frame.get('code')}: {frame.get('message')}")
        done += is_control("synthesis_complete")(frame)
        return done == len(messages)

    await read_until(channel, transcript, counted, timeout_s)
    return await close_and_drain(channel, transcript, timeout_s)
