"""The real tts container for tests: `python -m tts serve` on a free port, ready. A client's view of its
sessions is `tools/tts_client.py`."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

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
