"""Whether a Docker engine answers here; tests that need one skip with the reason."""

from __future__ import annotations

import functools
import shutil
import subprocess


@functools.cache
def docker_unavailable() -> str | None:
    """None when `docker info` works, else why not (no CLI, or no engine behind it)."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    try:
        result = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        return "docker info timed out: no Docker engine reachable"
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "docker info failed"
        return f"no Docker engine: {detail}"
    return None
