"""The command line's refusals (`python -m local_stack`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import REPO


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "8080"], "it needs --serve"),
        (["--serve", "--port", "70000"], "must be 1-65535"),
        (["--runs", "0"], "--runs: at least 1 run of each mode, not 0"),
        (["--runs", "three"], "--runs: a whole number of runs, not 'three'"),
    ],
)
def test_the_command_line_refuses_a_port_or_a_count_it_cannot_use(argv: list[str], message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "local_stack", *argv], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and message in result.stderr
