"""The base every image is built on: `python:3.12-slim` when it is present or pullable, else a local
Debian base made once.

A machine without Docker Hub (offline, or registries only through a company proxy) gets a base from
Debian's packages: `debootstrap --variant=minbase` of trixie with python3 and python3-venv (Python 3.13),
imported through the SDK as `LOCAL_BASE`. Its label `LOCAL_BASE_LABEL` holds a hash of the recipe, so
later builds reuse it and a changed recipe rebuilds; the root filesystem is also kept as a tarball in
`BASE_CACHE`, so an engine that lost its images (a fresh dockerd, another storage driver) gets the base
back in seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

from emulator.images import ImageBuildError, Progress, image_exists, quiet

DEFAULT_BASE = "python:3.12-slim"
LOCAL_BASE = "voice-agent-aws/python-base:trixie"
LOCAL_BASE_LABEL = "voice-agent-aws.base-recipe"
DEBIAN_SUITE = "trixie"
DEBIAN_PACKAGES = ("python3", "python3-venv", "ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_CACHE = Path("~/.cache/voice-agent-aws/base-image")


def _recipe_hash() -> str:
    recipe = f"debootstrap --variant=minbase --include={','.join(DEBIAN_PACKAGES)} {DEBIAN_SUITE}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _local_base_is_current(client: docker.DockerClient) -> bool:
    try:
        labels = client.images.get(LOCAL_BASE).labels or {}
    except docker.errors.ImageNotFound:
        return False
    return labels.get(LOCAL_BASE_LABEL) == _recipe_hash()


def _rootfs_tarball(progress: Progress) -> Path:
    """The base's root filesystem as a tarball, made once with debootstrap (root and debootstrap needed)."""
    cache = BASE_CACHE.expanduser()
    tarball = cache / f"{DEBIAN_SUITE}-{_recipe_hash()}.tar"
    if tarball.is_file():
        return tarball
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        raise ImageBuildError(
            "the base image cannot be pulled and no local base exists; making one needs root and "
            "debootstrap (apt-get install debootstrap), or pull/load a base and set EMULATOR_BASE_IMAGE"
        )
    progress(
        f"making the root filesystem of {LOCAL_BASE} from Debian {DEBIAN_SUITE} packages (debootstrap) ..."
    )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="base-rootfs-", dir=cache) as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            DEBIAN_SUITE,
            str(rootfs),
            DEBIAN_MIRROR,
        ]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
            raise ImageBuildError(f"debootstrap failed (status {result.returncode}):\n{tail}")
        for cached in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / cached).glob("*"):
                if item.is_file():
                    item.unlink()
        partial = Path(tmp) / "rootfs.tar"
        with tarfile.open(partial, "w") as tar:
            for child in sorted(rootfs.iterdir()):
                tar.add(child, arcname=child.name)
        partial.replace(tarball)
    return tarball


def build_local_base(client: docker.DockerClient, progress: Progress = quiet) -> str:
    """Import the Debian root filesystem (made once) as LOCAL_BASE, labelled with the recipe's hash."""
    started = time.monotonic()
    tarball = _rootfs_tarball(progress)
    repository, tag = LOCAL_BASE.rsplit(":", 1)
    changes = [
        f"LABEL {LOCAL_BASE_LABEL}={_recipe_hash()}",
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8",
        'CMD ["python3"]',
    ]
    with tarball.open("rb") as source:
        client.api.import_image(src=source, repository=repository, tag=tag, changes=changes)
    progress(f"built {LOCAL_BASE} in {time.monotonic() - started:.0f} s")
    return LOCAL_BASE


def resolve_base(client: docker.DockerClient, wanted: str = DEFAULT_BASE, progress: Progress = quiet) -> str:
    """`wanted` when present or pullable, else the local Debian base (built once, then reused)."""
    if image_exists(client, wanted):
        return wanted
    repository, _, tag = wanted.partition(":")
    try:
        client.images.pull(repository, tag=tag or "latest")
        return wanted
    except docker.errors.APIError as exc:
        progress(f"cannot pull {wanted} ({exc.explanation or exc}); using a local Debian base")
    if _local_base_is_current(client):
        return LOCAL_BASE
    return build_local_base(client, progress)
