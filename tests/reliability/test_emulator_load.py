"""Load through the emulator: 50 bidirectional sessions at once, for 30 s, with the official client.

Every message must come back (0 errors) and the emulator's memory must stay bounded: the resident
size of this process (the emulator runs in a thread of it, with the clients) after the load is
compared with after a warm-up.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator

import psutil
import pytest

from emulator.server import Emulator
from tests.emulator.support import (
    bidi_client,
    next_part,
    open_stream,
    part,
)
from tests.reliability.emulator_support import echo_emulator, say

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.slow, pytest.mark.timeout(300)]

SESSIONS = 50
DURATION_S = 30.0
INTERVAL_S = 0.5
RSS_GROWTH_LIMIT_MB = 150


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with echo_emulator(tmp_path_factory.mktemp("emulator"), replicas=2) as running:
        yield running


async def _session(emu: Emulator, index: int, deadline: float, errors: list[str]) -> int:
    echoed = 0
    try:
        client = await bidi_client(emu)
        stream = await open_stream(client, "echo")
        await stream.input_stream.send(part(f"{index}:0".encode(), "UTF8"))
        _, events = await stream.await_output()
        n = 0
        while True:
            got = await next_part(events, within_s=15)
            if got is None or got.bytes_ != f"{index}:{n}".encode():
                errors.append(f"session {index}: message {n} came back as {got!r}")
                break
            echoed += 1
            n += 1
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(INTERVAL_S)
            await stream.input_stream.send(part(f"{index}:{n}".encode(), "UTF8"))
        await stream.close()
    except Exception as exc:
        errors.append(f"session {index}: {type(exc).__name__}: {exc}")
    return echoed


async def test_fifty_bidirectional_sessions_for_thirty_seconds(emu: Emulator) -> None:
    me = psutil.Process()
    errors: list[str] = []
    await asyncio.gather(*(_session(emu, i, time.monotonic() + 2, errors) for i in range(SESSIONS)))
    gc.collect()
    warm_mb = me.memory_info().rss / 2**20
    started = time.monotonic()
    counts = await asyncio.gather(*(_session(emu, i, started + DURATION_S, errors) for i in range(SESSIONS)))
    elapsed = time.monotonic() - started
    gc.collect()
    after_mb = me.memory_info().rss / 2**20
    say(
        f"{SESSIONS} bidi sessions x {DURATION_S:g} s, a message every {INTERVAL_S:g} s",
        f"{sum(counts)} messages echoed in {elapsed:.1f} s, {len(errors)} errors, "
        f"RSS {warm_mb:.0f} -> {after_mb:.0f} MiB",
    )
    assert errors == []
    assert min(counts) >= DURATION_S / INTERVAL_S / 4, "every session kept going for the whole time"
    assert after_mb - warm_mb < RSS_GROWTH_LIMIT_MB
