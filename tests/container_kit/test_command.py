"""The containers' command line (container_kit/command.py) and the images' entry point
(container_kit/__main__.py, `python -m $CONTAINER_PACKAGE`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from container_kit.command import add_prepare, add_serve, command_line, run
from stt.config import STTConfig
from tests.support.paths import REPO


def entry(package: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_PACKAGE"}
    if package is not None:
        env["CONTAINER_PACKAGE"] = package
    command = [sys.executable, "-m", "container_kit", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_images_entry_point_runs_the_package_it_names():
    ran = entry("stt", "serve", "--help")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("usage: python -m stt serve") and "STT_PORT" in ran.stdout


@pytest.mark.parametrize("package", [None, "", "os; import x", "-c"])
def test_an_image_that_names_no_package_says_so(package: str | None):
    ran = entry(package, "serve")
    assert ran.returncode == 1
    assert "CONTAINER_PACKAGE must name the image's package" in ran.stderr


def test_serve_and_prepare_read_their_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    parser, commands = command_line("python -m kit", "a test container")
    add_serve(commands, STTConfig, lambda config: None, ws_max_size=1024)
    add_prepare(commands, lambda directory: (directory / "weights.bin").write_bytes(b"w"), "test weights")
    serve = parser.parse_args(["serve", "--host", "0.0.0.0", "--port", "9000", "--log-level", "debug"])
    assert (serve.command, serve.host, serve.port, serve.log_level) == ("serve", "0.0.0.0", 9000, "debug")
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--log-level", "loud"])
    assert run(parser, ["prepare", str(tmp_path)]) == 0
    assert (tmp_path / "weights.bin").read_bytes() == b"w"
    assert capsys.readouterr().out.startswith(f"wrote test weights into {tmp_path} in ")
