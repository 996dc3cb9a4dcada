"""The base of linux/arm64 images (the agent's, as AgentCore runs it) on a machine that cannot pull one:
Debian trixie for arm64 with Debian's Python 3.13, made once with mmdebstrap and imported for the
linux/arm64 platform.

Why not Python 3.12 as on amd64 (base.py) and in AWS's build (`python:3.12-slim`'s arm64 variant): no
Debian release packages 3.12 (bookworm has 3.11, trixie 3.13), the amd64 base's 3.12 is this machine's
pyenv build for x86_64, no registry reachable here ships a portable CPython for aarch64
(python-build-standalone's builds are on GitHub), and compiling CPython under emulation takes hours.
Every agent dependency has an aarch64 wheel for cp313 (or abi3) as it has for cp312 (pip's resolution
for `manylinux2014_aarch64`: 76 packages, 17 of them compiled); the arm64 test phase resolves the
agent's wheels for cp312 aarch64 as well, so a dependency without one fails there either way.

mmdebstrap, not debootstrap: debootstrap's second stage runs its shell and perl under QEMU and scans the
package lists once per package (over 10 minutes here before it had configured anything); mmdebstrap
resolves and downloads with the host's apt and runs only dpkg and the maintainer scripts emulated.
Needs root, mmdebstrap and qemu-aarch64 in binfmt_misc (`scripts/docker-engine emulation` installs and
registers them). The root filesystem is kept as a tarball in `BASE_CACHE` as base.py keeps its own.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

from emulator.controller.runtimes import ImagePlatform
from emulator.images import ImageBuildError, Progress, quiet
from emulator.images.base import (
    BASE_CACHE,
    DEBIAN_MIRROR,
    LOCAL_BASE_LABEL,
    SMOKE_TEST,
    bootstrap,
    pulled_or_local,
)
from emulator.images.platforms import SETUP_HINT, emulation_missing

PLATFORM = "linux/arm64"
ARM64_BASE = "voice-agent-aws/python-base:3.13-trixie-arm64"
SUITE = "trixie"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
_DOCKERFILE = """FROM scratch
ADD rootfs.tar /
LABEL {label}={recipe}
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
CMD ["python3"]
"""


def _recipe_hash() -> str:
    recipe = f"mmdebstrap --architectures=arm64 --variant=minbase --include={','.join(PACKAGES)} {SUITE}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def is_current(client: docker.DockerClient) -> bool:
    try:
        attrs = client.api.inspect_image(ARM64_BASE)
    except docker.errors.ImageNotFound:
        return False
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    return ImagePlatform.from_inspect(attrs).platform == PLATFORM and labels.get(LOCAL_BASE_LABEL) == (
        _recipe_hash()
    )


def _rootfs_tarball(progress: Progress) -> Path:
    """Debian trixie's arm64 root filesystem as a tarball, made once with mmdebstrap."""
    cache = BASE_CACHE.expanduser()
    tarball = cache / f"{SUITE}-arm64-{_recipe_hash()}.tar"
    if tarball.is_file():
        return tarball
    mmdebstrap = shutil.which("mmdebstrap")
    missing = emulation_missing(PLATFORM)
    if mmdebstrap is None or os.geteuid() != 0 or missing:
        raise ImageBuildError(
            f"no {PLATFORM} base can be pulled and none is made here; making one needs root, mmdebstrap "
            f"and qemu-aarch64 in binfmt_misc ({missing or 'registered'}): {SETUP_HINT}; or pull/load an "
            "arm64 base and pass --base-image"
        )
    progress(
        f"making the root filesystem of {ARM64_BASE} from Debian {SUITE}'s arm64 packages (mmdebstrap) ..."
    )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arm64-rootfs-", dir=cache) as tmp:
        partial = Path(tmp) / "rootfs.tar"
        include = f"--include={','.join(PACKAGES)}"
        bootstrap(
            [
                mmdebstrap,
                "--architectures=arm64",
                "--variant=minbase",
                include,
                SUITE,
                str(partial),
                DEBIAN_MIRROR,
            ]
        )
        partial.replace(tarball)
    return tarball


def _context(tarball: Path) -> io.BytesIO:
    """The build context: the Dockerfile, and the root filesystem that `ADD` unpacks."""
    dockerfile = _DOCKERFILE.format(label=LOCAL_BASE_LABEL, recipe=_recipe_hash()).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as context:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        context.addfile(info, io.BytesIO(dockerfile))
        context.add(tarball, arcname="rootfs.tar")
    buffer.seek(0)
    return buffer


def build_arm64_base(client: docker.DockerClient, progress: Progress = quiet) -> str:
    """ARM64_BASE from the root filesystem (made once): imported through a `FROM scratch` build for
    linux/arm64 (the SDK's import has no platform), then checked by running Python in it, emulated."""
    started = time.monotonic()
    tarball = _rootfs_tarball(progress)
    try:
        for chunk in client.api.build(
            fileobj=_context(tarball),
            custom_context=True,
            tag=ARM64_BASE,
            platform=PLATFORM,
            rm=True,
            decode=True,
        ):
            if "error" in chunk:
                raise ImageBuildError(f"importing {ARM64_BASE} failed: {chunk['error'].strip()}")
        client.containers.run(ARM64_BASE, ["python3", "-c", SMOKE_TEST], user="1000:1000", remove=True)
    except docker.errors.ContainerError as exc:
        raise ImageBuildError(f"Python does not run in {ARM64_BASE} under emulation: {exc}") from exc
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"importing {ARM64_BASE} failed: {exc.explanation or exc}") from exc
    progress(f"built {ARM64_BASE} in {time.monotonic() - started:.0f} s")
    return ARM64_BASE


def resolve_arm64_base(client: docker.DockerClient, wanted: str, progress: Progress = quiet) -> str:
    """`wanted` for linux/arm64 when present or pullable, else ARM64_BASE (made once, then reused)."""

    def local() -> str:
        return ARM64_BASE if is_current(client) else build_arm64_base(client, progress)

    return pulled_or_local(client, wanted, PLATFORM, progress, local)
