"""Which platforms this machine's Docker engine builds and runs: its own CPU's, and another's through
QEMU user emulation registered in the kernel's binfmt_misc.

AgentCore runs only linux/arm64 images; the machines this project is built and tested on are amd64.
With Debian's qemu-user-static registered for aarch64 with the F flag (the kernel opens the emulator
when it is registered, so a container's process finds it although the image has none), the engine's
classic builder builds `--platform linux/arm64` from an arm64 base and runs arm64 containers, a few
times slower than native (numbers in emulator/README.md). `scripts/docker-engine start` registers it
where it can, as root. A remote engine (DOCKER_HOST on another machine) registers its own, which this
machine cannot read: it is not counted on.
"""

from __future__ import annotations

import os
from pathlib import Path

import docker

ENGINE_PLATFORMS = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}
"""`docker info`'s Architecture -> the platform its builds produce."""
QEMU_HANDLERS = {"linux/arm64": "qemu-aarch64", "linux/amd64": "qemu-x86_64"}
"""The binfmt_misc entry that runs each platform's binaries on another CPU."""
BINFMT = Path("/proc/sys/fs/binfmt_misc")
SETUP_HINT = "scripts/docker-engine emulation (as root: qemu-user-static, binfmt_misc)"


def engine_platform(client: docker.DockerClient) -> str:
    return ENGINE_PLATFORMS.get(client.info().get("Architecture", ""), "unknown")


def emulation_missing(platform: str, binfmt: Path = BINFMT) -> str | None:
    """None when this machine's kernel runs `platform`'s binaries through QEMU in a container; else what
    is missing."""
    handler = QEMU_HANDLERS.get(platform)
    if handler is None:
        return f"{platform} is not a platform the builder knows ({', '.join(QEMU_HANDLERS)})"
    entry = binfmt / handler
    if not (binfmt / "register").exists():
        return f"binfmt_misc is not mounted on {binfmt}; {SETUP_HINT} sets it up"
    try:
        lines = entry.read_text().splitlines()
    except OSError:
        return f"no {handler} in binfmt_misc; {SETUP_HINT} registers it"
    flags = next((line.split(":", 1)[1] for line in lines if line.startswith("flags:")), "")
    if "enabled" not in lines:
        return f"{handler} is registered in binfmt_misc but disabled; {SETUP_HINT} enables it"
    if "F" not in flags:
        return (
            f"{handler} is registered without the F flag, so a container cannot find it; "
            f"{SETUP_HINT} registers Debian's, which has it"
        )
    return None


def _local_engine() -> bool:
    host = os.environ.get("DOCKER_HOST", "")
    return not host or host.startswith("unix://")


def cannot_run(client: docker.DockerClient, platform: str) -> str | None:
    """None when the engine builds and runs `platform` containers; else why not (with the fix)."""
    own = engine_platform(client)
    if platform == own:
        return None
    if not _local_engine():
        return (
            f"the engine at {os.environ['DOCKER_HOST']} is {own} and on another machine, whose "
            f"emulation of {platform} this one cannot see"
        )
    missing = emulation_missing(platform)
    return None if missing is None else f"this {own} engine cannot run {platform}: {missing}"
