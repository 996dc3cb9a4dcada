"""Starting real servers for tests: free loopback ports, child processes that are always reaped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http_ok(url: str, timeout: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer 200 within {timeout} s")


@contextmanager
def running(
    args: list[str], ready_url: str, env: dict[str, str] | None = None, timeout: float = 60.0
) -> Iterator[subprocess.Popen]:
    """Run `args` (a Python module command line) until the block ends; its whole process group is killed."""
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        wait_http_ok(ready_url, timeout, process)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
