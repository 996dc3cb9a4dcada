"""`python -m benchmarks`: an unknown study is refused, and two cheap studies run end to end with
--quick, leaving valid JSON and a PNG (no timing asserted: speed targets live in the benchmarks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import pytest

from tests.support.paths import REPO


def test_an_unknown_study_is_refused_with_the_list() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "nope"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "unknown study nope" in result.stderr and "transport" in result.stderr


# slow: two studies against real servers (18 s); their parts are tests/benchmarks' other modules.
@pytest.mark.slow
@pytest.mark.integration  # real servers: the emulator, the echo and Kokoro containers, official clients
def test_quick_studies_write_json_and_png(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "emulator", "framing", "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    for study in ("emulator", "framing"):
        image = matplotlib.image.imread(tmp_path / f"{study}.png")
        assert image.shape[0] > 300 and image.shape[1] > 600, "a readable figure"
    emulator = json.loads((tmp_path / "emulator.json").read_text())
    assert emulator["study"] == "emulator" and emulator["quick"] is True and emulator["machine"]["cpus"]
    assert emulator["round_trip"]["through_emulator"]["count"] == 200
    assert emulator["round_trip"]["direct_websocket"]["count"] == 200
    assert emulator["concurrency"]["sessions"] == 50 and emulator["concurrency"]["errors"] == 0
    assert emulator["concurrency"]["messages"] > 50
    framing = json.loads((tmp_path / "framing.json").read_text())
    assert framing["totals"]["chunks_ending_mid_event"] > 0, "re-chunking was on"
    assert framing["naive_failures"] > 0
    assert framing["buffered_failures"] == 0 and framing["buffered_audio_intact"] is True
    assert framing["totals"]["buffered_events"] == framing["totals"]["events"]
    assert "naive consumer" in result.stdout
