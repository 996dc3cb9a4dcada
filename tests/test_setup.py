"""The README's ways in keep working: the tox environments it names, and uv's lock of pyproject.toml.

tox and uv come with the `test` extra (and so with scripts/bootstrap and `uv sync`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

README_TOX_ENVS = {"unit", "integration", "reliability", "lint", "gpu", "cdk"}


def run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)


def test_tox_has_every_environment_the_readme_names() -> None:
    listed = run([sys.executable, "-m", "tox", "list", "--no-desc"], timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert set(listed.stdout.split()) >= README_TOX_ENVS
    shown = run(
        [sys.executable, "-m", "tox", "config", "-e", "integration", "-k", "commands", "runner"], timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "pytest -m integration" in shown.stdout
    assert "uv-venv" in shown.stdout, "tox-uv makes the environments (packages linked from uv's cache)"


@pytest.mark.timeout(300)
def test_tox_lint_runs(tmp_path: Path) -> None:
    """A real tox run: it builds its own environment (ruff from the index) and lints the tree."""
    result = run([sys.executable, "-m", "tox", "--workdir", str(tmp_path), "-e", "lint"], timeout=280)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "lint: OK" in result.stdout


@pytest.mark.timeout(120)
def test_uv_lock_matches_pyproject() -> None:
    uv = shutil.which(
        "uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if uv is None:
        pytest.skip("uv is not installed")
    result = run([uv, "lock", "--check", "--offline"], timeout=110)
    assert result.returncode == 0, f"uv.lock is stale: run `uv lock`\n{result.stderr[-2000:]}"
