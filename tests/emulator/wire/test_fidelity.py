"""The fidelity knobs: latency and jitter keep order, response streams are re-chunked repeatably."""

from __future__ import annotations

import random

from emulator.config import EmulatorConfig
from emulator.wire.fidelity import Delay, Rechunker


def test_delay_keeps_order_and_adds_latency() -> None:
    delay = Delay(latency_ms=50, jitter_ms=40, rng=random.Random(1))
    dues = [delay.due(arrived=t / 1000) for t in range(0, 100, 5)]
    assert dues == sorted(dues)
    assert all(due >= t / 1000 + 0.010 for due, t in zip(dues, range(0, 100, 5), strict=True))
    assert not Delay(0, 0).active


def test_rechunker_splits_at_arbitrary_boundaries() -> None:
    data = bytes(range(256)) * 4
    parts = Rechunker((1, 7), seed=3).split(data)
    assert b"".join(parts) == data and all(1 <= len(p) <= 7 for p in parts)
    assert Rechunker(None).split(data) == [data]


def test_response_streams_are_split_by_default_and_repeatably() -> None:
    config = EmulatorConfig.from_env({})
    first, again = (
        Rechunker(config.rechunk, config.rechunk_seed),
        Rechunker(config.rechunk, config.rechunk_seed),
    )
    writes = [b'data: {"n": 1}\n\n', b"x", b"ab", bytes(range(256)) * 40]
    for write in writes:
        parts = first.split(write)
        assert b"".join(parts) == write and parts == again.split(write)
        assert len(parts) >= 2 or len(write) == 1, "every write of two bytes or more is cut"
        assert 2 <= len(parts) <= 4 or len(write) < 3
    assert "arbitrary" in first.describe() and "seed 0" in first.describe()
    assert EmulatorConfig.from_env({"EMULATOR_RECHUNK": "off"}).rechunk is None
    assert Rechunker(None).describe().startswith("off")
    assert Rechunker((1, 64), 5).describe() == "parts of 1-64 bytes (seed 5)"
