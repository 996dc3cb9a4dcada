"""Fixtures shared by every test package: one real tts container per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.tts_session import Server, tts_container

__all__ = ["Server"]


@pytest.fixture(scope="session")
def tts_server() -> Iterator[Server]:
    """`python -m tts serve` with the real Kokoro model, shared by the whole test session."""
    with tts_container() as (server, _):
        yield server
