"""Fidelity knobs: what a deployed hop adds that loopback does not.

`Delay` adds latency (plus uniform jitter) to every message in one direction while keeping their
order and without limiting throughput: a message is due at its arrival time plus the latency, never
before the message ahead of it. `Rechunker` splits response-stream bytes at arbitrary boundaries, as
networks and proxies do, so SSE/JSON consumers are tested against mid-frame splits; it is on by
default, because a consumer that passes locally with one part per write fails on AWS.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator

from emulator.config import ARBITRARY


class Delay:
    def __init__(self, latency_ms: float, jitter_ms: float, rng: random.Random | None = None) -> None:
        self.latency_s = latency_ms / 1000
        self.jitter_s = jitter_ms / 1000
        self.active = latency_ms > 0 or jitter_ms > 0
        self._rng = rng or random.Random()
        self._last_due = 0.0

    def due(self, arrived: float) -> float:
        extra = self.latency_s + self._rng.uniform(-self.jitter_s, self.jitter_s)
        self._last_due = max(self._last_due, arrived + max(0.0, extra))
        return self._last_due

    async def hold(self, arrived: float) -> None:
        """Sleep until a message that arrived at `arrived` (monotonic) is due."""
        if self.active:
            wait = self.due(arrived) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)


async def delayed_chunks(chunks: AsyncIterator[bytes], delay: Delay) -> AsyncIterator[bytes]:
    """Relay chunks, each held back by the out-direction latency from the moment it arrived."""
    if not delay.active:
        async for chunk in chunks:
            yield chunk
        return
    queue: asyncio.Queue[tuple[float, bytes] | BaseException | None] = asyncio.Queue()

    async def read() -> None:
        try:
            async for chunk in chunks:
                queue.put_nowait((time.monotonic(), chunk))
            queue.put_nowait(None)
        except Exception as exc:
            queue.put_nowait(exc)

    reader = asyncio.get_running_loop().create_task(read())
    try:
        while (item := await queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            await delay.hold(item[0])
            yield item[1]
    finally:
        reader.cancel()


MAX_CUTS = 3


class Rechunker:
    """Split response-stream bytes as networks and proxies do, so a consumer that takes each part for
    a whole event fails here as it would on AWS.

    `sizes` is one of: `"arbitrary"` (the default: every read from the container is cut at 1 to 3
    random points, so every event is split and, where writes arrive together, parts end mid-event),
    `(MIN, MAX)` (parts of MIN..MAX bytes), or None (off: one part per read). Seeded, so a failing
    split can be replayed (`EMULATOR_RECHUNK_SEED`).
    """

    def __init__(self, sizes: tuple[int, int] | str | None, seed: int | None = None) -> None:
        self.sizes = sizes
        self.seed = seed
        self._rng = random.Random(seed)

    def describe(self) -> str:
        seed = f"seed {self.seed}" if self.seed is not None else "unseeded"
        if self.sizes is None:
            return "off (one part per container write)"
        if self.sizes == ARBITRARY:
            return f"arbitrary (each container write cut at 1-{MAX_CUTS} random points, {seed})"
        low, high = self.sizes
        return f"parts of {low}-{high} bytes ({seed})"

    def split(self, data: bytes) -> list[bytes]:
        if self.sizes is None or not data:
            return [data] if data else []
        if self.sizes == ARBITRARY:
            count = min(len(data) - 1, self._rng.randint(1, MAX_CUTS))
            cuts = sorted(self._rng.sample(range(1, len(data)), count)) if count > 0 else []
            return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        low, high = self.sizes
        parts = []
        pos = 0
        while pos < len(data):
            size = self._rng.randint(low, high)
            parts.append(data[pos : pos + size])
            pos += size
        return parts
