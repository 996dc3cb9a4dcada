"""Fixtures shared by every test package: one real tts container per test session; docker-marked tests
need a Docker engine (skipped without one, failed in CI: tests/support/docker.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from emulator.processes import child, free_port
from tests.support.docker import require_docker
from tests.support.paths import REPO


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None:
        require_docker()


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


@pytest.fixture(scope="session")
def tts_server() -> Iterator[Server]:
    """`python -m tts serve` with the real Kokoro model, shared by the whole test session."""
    port = free_port()
    argv = [sys.executable, "-m", "tts", "serve", "--port", str(port), "--log-level", "warning"]
    with child(argv, ready_url=f"http://127.0.0.1:{port}/ping", timeout_s=120, cwd=REPO):
        yield Server("127.0.0.1", port)
