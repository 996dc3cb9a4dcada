"""Fixtures shared by every test package: one real tts container per test session; docker-marked tests
need a Docker engine (skipped without one, failed in CI: tests/support/docker.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.docker import require_docker
from tests.support.tts_session import Server, tts_container

__all__ = ["Server"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None:
        require_docker()


@pytest.fixture(scope="session")
def tts_server() -> Iterator[Server]:
    """`python -m tts serve` with the real Kokoro model, shared by the whole test session."""
    with tts_container() as (server, _):
        yield server
