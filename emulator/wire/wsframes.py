"""A WebSocket connection handled frame by frame, not message by message.

SageMaker's sidecar maps one PayloadPart to exactly one WebSocket frame, FIN bit included. The
`websockets` high-level API hides that: `recv_streaming()` does not say which fragment is the last
until the next one is asked for, and `send(iterable)` ends every fragmented message with an extra
empty continuation frame. So this module drives `websockets`' sans-I/O protocol objects directly over
asyncio streams: each call sends one frame, each `recv()` returns one frame with its opcode and FIN.
Pings from the peer are answered by the protocol object; the caller sends its own pings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from typing import Literal

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

FrameKind = Literal["text", "binary", "continuation"]

_KINDS: dict[Opcode, FrameKind] = {
    Opcode.TEXT: "text",
    Opcode.BINARY: "binary",
    Opcode.CONT: "continuation",
}
_READ_SIZE = 256 * 1024
_QUEUE_HIGH = 256
_QUEUE_LOW = 64


@dataclass(frozen=True, slots=True)
class WsFrame:
    kind: FrameKind
    data: bytes
    fin: bool
    at: float = 0.0
    """`time.monotonic()` when it was read off the socket (for added-latency knobs)."""


class HandshakeRejected(Exception):
    """The server answered the upgrade request with something other than 101."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"WebSocket handshake rejected with HTTP {status}")
        self.status = status
        self.body = body


class FrameSocket:
    """One open WebSocket connection (client or server side)."""

    def __init__(
        self,
        protocol: ClientProtocol | ServerProtocol,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        early: list[Frame] | None = None,
    ) -> None:
        self._protocol = protocol
        self._reader = reader
        self._writer = writer
        self._frames: asyncio.Queue[WsFrame | None] = asyncio.Queue()
        self._resume = asyncio.Event()
        self._resume.set()
        self.unanswered_pings = 0
        self._last_moved = time.monotonic()
        for frame in early or ():
            self._on_frame(frame)
        self._read_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls, host: str, port: int, resource: str, *, limit_s: float, headers: dict[str, str] | None = None
    ) -> FrameSocket:
        """Open `ws://host:port<resource>`; raise HandshakeRejected, OSError or TimeoutError."""
        protocol = ClientProtocol(parse_uri(f"ws://{host}:{port}{resource}"), max_size=None)
        async with asyncio.timeout(limit_s):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                request = protocol.connect()
                for name, value in (headers or {}).items():
                    request.headers[name] = value
                protocol.send_request(request)
                _flush(protocol, writer)
                response, early = await _read_handshake(protocol, reader)
            except BaseException:
                writer.close()
                raise
        if protocol.state is not State.OPEN:
            writer.close()
            status = response.status_code if response is not None else 0
            body = response.body if response is not None and response.body else b""
            raise HandshakeRejected(status, body)
        return cls(protocol, reader, writer, early)

    @classmethod
    async def accept(
        cls,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        head: bytes,
        *,
        reject: tuple[int, str] | None = None,
    ) -> FrameSocket | None:
        """Answer an upgrade request whose head (request line + headers) was already read."""
        protocol = ServerProtocol(max_size=None)
        protocol.receive_data(head)
        events = protocol.events_received()
        request = events[0] if events and isinstance(events[0], Request) else None
        if request is None:
            writer.close()
            return None
        response = protocol.reject(*reject) if reject else protocol.accept(request)
        protocol.send_response(response)
        _flush(protocol, writer)
        await writer.drain()
        if protocol.state is not State.OPEN:
            writer.close()
            return None
        return cls(protocol, reader, writer)

    @property
    def open(self) -> bool:
        return self._protocol.state is State.OPEN

    @property
    def close_code(self) -> int | None:
        """The peer's close code (1006 when the connection dropped without a Close)."""
        if self._protocol.close_rcvd is not None:
            return self._protocol.close_rcvd.code
        return 1006 if self._protocol.state is State.CLOSED else None

    @property
    def close_reason(self) -> str:
        return self._protocol.close_rcvd.reason if self._protocol.close_rcvd is not None else ""

    @property
    def close_sent_first(self) -> bool:
        """True when this side started the closing handshake."""
        return self._protocol.close_sent is not None and not getattr(
            self._protocol, "close_rcvd_then_sent", False
        )

    async def send(self, kind: FrameKind, data: bytes, fin: bool = True) -> None:
        """Send exactly one data frame."""
        if kind == "text":
            self._protocol.send_text(data, fin=fin)
        elif kind == "binary":
            self._protocol.send_binary(data, fin=fin)
        else:
            self._protocol.send_continuation(data, fin=fin)
        _flush(self._protocol, self._writer)
        await self._writer.drain()

    async def ping(self) -> None:
        self._protocol.send_ping(os.urandom(4))
        self.unanswered_pings += 1
        _flush(self._protocol, self._writer)
        await self._writer.drain()

    async def recv(self) -> WsFrame | None:
        """The next data frame, or None once the peer's Close arrived or the connection dropped."""
        frame = await self._frames.get()
        self._last_moved = time.monotonic()
        if frame is None:
            self._frames.put_nowait(None)
        elif self._frames.qsize() <= _QUEUE_LOW:
            self._resume.set()
        return frame

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake (no-op once closing); `wait_closed()` waits for its end."""
        if self._protocol.state is State.OPEN:
            self._protocol.send_close(code, reason)
            _flush(self._protocol, self._writer)
            try:
                await self._writer.drain()
            except ConnectionError:
                self.abort()

    async def wait_closed(self, idle_s: float) -> None:
        """Wait for the TCP connection to end; drop it once no frame has moved (read off the socket or
        taken by `recv()`) for `idle_s`.

        Measured from the last move, not from the call: a consumer that fell behind may still be taking
        megabytes of audio the peer sent before its Close (458 × 32 KiB took over 10 s through TLS and
        HTTP/2 on a busy 2-core machine), and that output is cut only when it stops moving."""
        while not self._read_task.done():
            quiet_s = time.monotonic() - self._last_moved
            if quiet_s >= idle_s:
                self.abort()
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(idle_s - quiet_s):
                    await asyncio.shield(self._read_task)

    def abort(self) -> None:
        self._read_task.cancel()
        self._writer.transport.abort()

    async def _read_loop(self) -> None:
        try:
            while self._protocol.state is not State.CLOSED:
                await self._resume.wait()
                data = await self._reader.read(_READ_SIZE)
                self._last_moved = time.monotonic()
                if data:
                    self._protocol.receive_data(data)
                else:
                    self._protocol.receive_eof()
                for event in self._protocol.events_received():
                    self._on_frame(event)
                _flush(self._protocol, self._writer)
                if not data:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            self._frames.put_nowait(None)
            self._writer.close()

    def _on_frame(self, frame: Frame) -> None:
        kind = _KINDS.get(frame.opcode)
        if kind is not None:
            self._frames.put_nowait(WsFrame(kind, bytes(frame.data), frame.fin, time.monotonic()))
            if self._frames.qsize() >= _QUEUE_HIGH:
                self._resume.clear()
        elif frame.opcode is Opcode.PONG:
            self.unanswered_pings = 0
        elif frame.opcode is Opcode.CLOSE:
            self._frames.put_nowait(None)


def _flush(protocol: ClientProtocol | ServerProtocol, writer: asyncio.StreamWriter) -> None:
    for chunk in protocol.data_to_send():
        if chunk:
            writer.write(chunk)
        elif writer.can_write_eof() and not writer.is_closing():
            writer.write_eof()


async def _read_handshake(
    protocol: ClientProtocol, reader: asyncio.StreamReader
) -> tuple[Response | None, list[Frame]]:
    """Read until the upgrade response; also return frames that arrived in the same read."""
    while True:
        data = await reader.read(_READ_SIZE)
        if data:
            protocol.receive_data(data)
        else:
            protocol.receive_eof()
        events = protocol.events_received()
        for i, event in enumerate(events):
            if isinstance(event, Response):
                return event, [e for e in events[i + 1 :] if isinstance(e, Frame)]
        if not data:
            return None, []
