"""`python -m emulator.bench` runs end to end with tiny settings and writes its JSON (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients

REPO = Path(__file__).resolve().parents[2]


def test_bench_smoke_run_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "emulator.bench",
            "--messages",
            "5",
            "--warmup",
            "1",
            "--sessions",
            "2",
            "--duration",
            "0.5",
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in {0, 1}, result.stderr
    report = json.loads(out.read_text())
    assert report["round_trip"]["through_emulator"]["count"] == 5
    assert report["round_trip"]["direct_websocket"]["count"] == 5
    assert report["concurrency"]["errors"] == 0
    assert report["concurrency"]["messages"] > 0
