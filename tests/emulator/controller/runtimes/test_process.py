"""The process runtime: an image name matches its repository; a replica's temporary files go with it, as
a child server's do (`emulator.processes.child`: the local stack's agent, the tests' containers)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from emulator.config import ImageSpec
from emulator.controller.runtimes import StartRequest
from emulator.controller.runtimes.process import ProcessRuntime, image_key_candidates
from emulator.processes import child


@pytest.mark.parametrize(
    "image",
    [
        "kokoro-tts",
        "voice-agent-aws/kokoro-tts:latest",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts:1.0",
        "localhost:5000/team/kokoro-tts@sha256:abc",
    ],
)
def test_image_names_match_their_repository(image: str) -> None:
    assert "kokoro-tts" in image_key_candidates(image)


# A replica that writes a temporary file, says where, and waits to be stopped.
WRITES_A_TEMPORARY_FILE = (
    "import pathlib, tempfile, time; d = pathlib.Path(tempfile.mkdtemp()); (d / 'left').write_bytes(b'x'); "
    "print(d, flush=True); time.sleep(120)"
)


def first_line(log: Path, within_s: float = 30) -> str:
    deadline = time.monotonic() + within_s
    while not (text := log.read_text()).strip():
        assert time.monotonic() < deadline, f"nothing in {log} within {within_s} s"
        time.sleep(0.05)
    return text.splitlines()[0]


async def start_then_stop(log: Path, grace_s: float) -> Path:
    """What the replica wrote, checked there while it ran; then it is stopped (killed at once at 0 s)."""
    runtime = ProcessRuntime({"writer": ImageSpec(("{python}", "-c", WRITES_A_TEMPORARY_FILE))})
    replica = await runtime.start(StartRequest("writer-0", "writer", {}, None, log))
    written = Path(await asyncio.to_thread(first_line, log))
    assert await asyncio.to_thread((written / "left").exists)
    await replica.stop(grace_s)
    return written


@pytest.mark.parametrize("grace_s", [0.0, 5.0], ids=["killed", "stopped"])
def test_a_replicas_temporary_files_go_with_it(tmp_path: Path, grace_s: float) -> None:
    """Killed (no clean-up of its own runs) or stopped, what a replica left in its temporary directory is
    gone once it has exited, as a container's /tmp is: none of it stays in the host's."""
    written = asyncio.run(start_then_stop(tmp_path / "writer.log", grace_s))
    assert not written.exists(), "what the replica wrote in its temporary directory outlived it"
    own = written.parent
    assert own.parent == Path(tempfile.gettempdir()) and own.name.startswith("replica-writer-0-")
    assert not own.exists()


def test_a_child_servers_temporary_files_go_with_it() -> None:
    """Ended by SIGTERM, which runs none of its clean-up (as uvicorn's re-raised one does not)."""
    with child([sys.executable, "-c", WRITES_A_TEMPORARY_FILE], stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        written = Path(process.stdout.readline().strip())
        assert (written / "left").exists()
    assert process.returncode == -15
    assert not written.exists() and not written.parent.exists(), "the child's temporary files outlived it"
    assert written.parent.parent == Path(tempfile.gettempdir())
