"""`--serve --port N`: the web page on a port of your choice. The agent's replica listens where the
emulator put it (a free port, as every replica); `relay()` listens on 127.0.0.1:N and passes each
connection through to the replica byte for byte, both ways (the page, its POSTs and their SSE streams
alike), in a thread of this process until the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

CHUNK = 64 * 1024


class RelayError(OSError):
    """The relay's port cannot be listened on (in use, or not ours to take)."""


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # a half-close passes on as one
    except (ConnectionError, OSError):
        writer.close()


async def _relay(sock: socket.socket, target: tuple[str, int], stop: asyncio.Event) -> None:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            upstream_writer.close()
            writer.close()

    server = await asyncio.start_server(connection, sock=sock)
    await stop.wait()
    server.close()
    # Connections still open (a browser keeps them alive) end with the relay: waiting for them would
    # hold Ctrl-C up for as long as the browser stays.
    open_connections = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in open_connections:
        task.cancel()
    await asyncio.gather(*open_connections, return_exceptions=True)


@contextlib.contextmanager
def relay(port: int, target: tuple[str, int]) -> Iterator[str]:
    """127.0.0.1:`port` relayed to `target` for the block; yields the relay's URL. RelayError when
    the port cannot be listened on."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise RelayError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(_relay(sock, target, stop),), name="web-relay", daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        if not thread.is_alive():
            loop.close()
