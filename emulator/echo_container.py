"""An echo model container that honours the SageMaker container contract frame by frame.

`python -m emulator.echo_container [serve] [--host H] [--port P]` serves:

- `GET /ping` -> 200 (`ECHO_PING_STATUS` overrides the status, e.g. 503 for a replica that never
  becomes healthy; `ECHO_STARTUP_DELAY_S` delays listening, like a model that loads).
- `POST /invocations` -> the body back with its Content-Type and custom attributes. A body sent as
  `application/x-echo-command+json` is a command: `{"status": 500, "body": "..."}` answers with that
  status; `{"chunks": ["a", "b"], "delay_ms": 5}` streams the chunks (chunked encoding);
  `"break_after": N` drops the connection after N chunks.
- `WS /invocations-bidirectional-stream` -> every frame back as-is: same opcode, same FIN bit.
- `WS /report` (ModelInvocationPath `report`) -> for every frame received, one text frame describing
  it: `{"opcode": "text"|"binary"|"continuation", "fin": bool, "data": str, "path", "query", "pid"}`.
  A complete text frame holding `{"cmd": ...}` is a command instead: `{"cmd": "send", "frames":
  [{"kind": "text"|"binary"|"continuation", "data": str, "fin": bool}, ...]}` sends those raw frames,
  `{"cmd": "close", "code": 1011, "reason": "..."}` closes the WebSocket, `{"cmd": "env", "names": [...]}`
  answers those environment variables and the files of `SM_MODEL_DIR`.

It is the reference container for the emulator's tests and for `python -m benchmarks emulator`, written
on raw frames (emulator.wire.wsframes) so it sees fragments exactly as they travel.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
from collections.abc import Mapping
from pathlib import Path

from emulator.wire.wsframes import FrameSocket, WsFrame

COMMAND_TYPE = "application/x-echo-command+json"
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error", 503: "Unavailable"}


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _response_head(status: int, headers: Mapping[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _respond(writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str, **extra: str):
    headers = {"Content-Type": content_type, "Content-Length": str(len(body)), **extra}
    writer.write(_response_head(status, headers) + body)
    await writer.drain()


async def _invocations(writer: asyncio.StreamWriter, headers: dict[str, str], body: bytes) -> bool:
    """Answer POST /invocations; return False when the connection was dropped on purpose."""
    content_type = headers.get("content-type", "application/octet-stream")
    extra = {}
    if "x-amzn-sagemaker-custom-attributes" in headers:
        extra["X-Amzn-SageMaker-Custom-Attributes"] = headers["x-amzn-sagemaker-custom-attributes"]
    if content_type != COMMAND_TYPE:
        await _respond(writer, 200, body, content_type, **extra)
        return True
    try:
        command = json.loads(body)
    except ValueError:
        await _respond(writer, 400, b"command is not JSON", "text/plain")
        return True
    if "chunks" not in command:
        out = str(command.get("body", "")).encode()
        await _respond(writer, int(command.get("status", 200)), out, "text/plain", **extra)
        return True
    writer.write(
        _response_head(
            int(command.get("status", 200)),
            {"Content-Type": "text/plain", "Transfer-Encoding": "chunked", **extra},
        )
    )
    for index, chunk in enumerate(command["chunks"]):
        if index == command.get("break_after"):
            await writer.drain()
            writer.transport.abort()
            return False
        data = str(chunk).encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
        await asyncio.sleep(float(command.get("delay_ms", 0)) / 1000)
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True


def _describe(frame: WsFrame, path: str, query: str) -> bytes:
    report: dict[str, object] = {
        "opcode": frame.kind,
        "fin": frame.fin,
        "path": path,
        "query": query,
        "pid": os.getpid(),
    }
    try:
        report["data"] = frame.data.decode()
    except UnicodeDecodeError:
        report["data_b64"] = base64.b64encode(frame.data).decode()
    return json.dumps(report).encode()


def _environment(names: list[str]) -> dict[str, object]:
    model_dir = os.environ.get("SM_MODEL_DIR")
    files = sorted(str(p.relative_to(model_dir)) for p in Path(model_dir).rglob("*")) if model_dir else []
    return {"env": {name: os.environ.get(name) for name in names}, "model_files": files, "pid": os.getpid()}


async def _report_session(ws: FrameSocket, path: str, query: str) -> None:
    in_message = False
    while (frame := await ws.recv()) is not None:
        command = None
        if frame.kind == "text" and frame.fin and not in_message:
            with contextlib.suppress(ValueError):
                parsed = json.loads(frame.data)
                command = parsed if isinstance(parsed, dict) and "cmd" in parsed else None
        in_message = not frame.fin
        if command is None:
            await ws.send("text", _describe(frame, path, query))
        elif command["cmd"] == "send":
            for out in command.get("frames", []):
                await ws.send(
                    out.get("kind", "text"), str(out.get("data", "")).encode(), bool(out.get("fin", True))
                )
        elif command["cmd"] == "close":
            await ws.close(int(command.get("code", 1000)), str(command.get("reason", "")))
        elif command["cmd"] == "env":
            await ws.send("text", json.dumps(_environment(command.get("names", []))).encode())
    await ws.wait_closed(5)


async def _echo_session(ws: FrameSocket) -> None:
    while (frame := await ws.recv()) is not None:
        await ws.send(frame.kind, frame.data, frame.fin)
    await ws.wait_closed(5)


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    ping_status = int(os.environ.get("ECHO_PING_STATUS", "200"))
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, headers = _parse_head(head)
            path, _, query = target.partition("?")
            if headers.get("upgrade", "").lower() == "websocket":
                known = path in {"/invocations-bidirectional-stream", "/report"}
                ws = await FrameSocket.accept(
                    reader, writer, head, reject=None if known else (404, "no such path")
                )
                if ws is not None:
                    await (_report_session(ws, path, query) if path == "/report" else _echo_session(ws))
                return
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method in {"GET", "POST"} and path == "/ping":
                await _respond(writer, ping_status, b'{"status":"ok"}', "application/json")
            elif method == "POST" and path == "/invocations":
                if not await _invocations(writer, headers, body):
                    return
            else:
                await _respond(writer, 404, b"not found", "text/plain")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(host: str, port: int) -> None:
    await asyncio.sleep(float(os.environ.get("ECHO_STARTUP_DELAY_S", "0")))
    connections: set[asyncio.Task[object]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connections.add(task)
        try:
            await _serve_connection(reader, writer)
        finally:
            connections.discard(task)

    server = await asyncio.start_server(connection, host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"echo container listening on {host}:{port}", flush=True)
    await stop.wait()
    # Keep-alive connections (the health probes) would hold `wait_closed()` open: end them.
    server.close()
    for task in list(connections):
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m emulator.echo_container", description=__doc__.split("\n")[0]
    )
    parser.add_argument("mode", nargs="?", default="serve", choices=["serve"])
    parser.add_argument("--host", default=os.environ.get("ECHO_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("ECHO_PORT", "8080")))
    args = parser.parse_args(argv)
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
