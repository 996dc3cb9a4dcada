"""The base every image is built on: `python:3.12-slim` when it is present or pullable, else a local
Debian base made once.

A machine without Docker Hub (offline, or registries only through a company proxy) gets a stand-in for
`python:3.12-slim` (the Python of the SageMaker images; `kokoro` 0.9.4, in the GPU image, needs < 3.13):
`debootstrap --variant=minbase` of Debian bookworm with the shared libraries CPython loads, plus this
machine's CPython 3.12 (pyenv's, built on bookworm: `PYENV_ROOT`, else `~/.pyenv`) copied in at its own
path without its site-packages and test suite, `python3` on PATH. Debian has no 3.12 package (bookworm
has 3.11, trixie 3.13). The copy is checked inside the root filesystem (ssl, ctypes, sqlite3, venv)
before it is imported through the SDK as `LOCAL_BASE`. Its label `LOCAL_BASE_LABEL` holds a hash of the
recipe (packages and the exact Python version), so later builds reuse it and a changed recipe rebuilds;
the root filesystem is also kept as a tarball in `BASE_CACHE`, so an engine that lost its images (a fresh
dockerd, another storage driver) gets the base back in seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from emulator.controller.runtimes import ImagePlatform
from emulator.images import ImageBuildError, Progress, quiet
from emulator.images.platforms import engine_platform

DEFAULT_BASE = "python:3.12-slim"
LOCAL_BASE = "voice-agent-aws/python-base:3.12-bookworm"
LOCAL_BASE_LABEL = "voice-agent-aws.base-recipe"
PYTHON_SERIES = "3.12"
DEBIAN_SUITE = "bookworm"
# What CPython's extension modules link against (ldd of lib-dynload), and the CA bundle.
DEBIAN_PACKAGES = (
    "ca-certificates",
    "libssl3",
    "libffi8",
    "libsqlite3-0",
    "libbz2-1.0",
    "liblzma5",
    "zlib1g",
    "libncursesw6",
    "libreadline8",
    "libuuid1",
    "libexpat1",
)
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_CACHE = Path("~/.cache/voice-agent-aws/base-image")
# Left out of the copied Python: 127 MB of its own tests, and whatever was pip-installed into it.
_PYTHON_EXCLUDES = (f"python{PYTHON_SERIES}/test", f"python{PYTHON_SERIES}/site-packages")
# The modules that load shared libraries, and a virtual environment with pip (what the Dockerfiles make).
SMOKE_TEST = (
    "import ssl, ctypes, sqlite3, bz2, lzma, zlib, uuid, subprocess, venv; "
    "venv.create('/tmp/smoke-venv', with_pip=True); "
    "subprocess.run(['/tmp/smoke-venv/bin/python', '-c', 'import ssl, pip'], check=True)"
)


def machine_python() -> Path:
    """The prefix of this machine's newest CPython 3.12 under pyenv (`PYENV_ROOT`, else ~/.pyenv)."""
    root = Path(os.environ.get("PYENV_ROOT") or "~/.pyenv").expanduser()
    found = sorted(
        (
            path
            for path in (root / "versions").glob(f"{PYTHON_SERIES}.*")
            if (path / "bin" / "python3").is_file()
        ),
        key=lambda path: tuple(int(part) for part in path.name.split(".") if part.isdigit()),
    )
    if not found:
        raise ImageBuildError(
            f"the local base needs a CPython {PYTHON_SERIES} built on Debian {DEBIAN_SUITE} under "
            f"{root}/versions (pyenv install {PYTHON_SERIES}), or pull/load a base and set "
            "EMULATOR_BASE_IMAGE"
        )
    return found[-1]


def _recipe_hash() -> str:
    python = machine_python()
    recipe = (
        f"debootstrap --variant=minbase --include={','.join(DEBIAN_PACKAGES)} {DEBIAN_SUITE} "
        f"+ {python} ({python.name}) without {','.join(_PYTHON_EXCLUDES)}, readable by every user"
    )
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _copy_python(python: Path, rootfs: Path) -> None:
    """`python` at its own path inside `rootfs` (its binary finds its prefix and libpython there)."""
    target = rootfs / python.relative_to("/")
    shutil.copytree(
        python,
        target,
        symlinks=True,
        ignore=lambda directory, names: [
            name for name in names if any(f"{directory}/{name}".endswith(e) for e in _PYTHON_EXCLUDES)
        ],
    )
    (target / "lib" / f"python{PYTHON_SERIES}" / "site-packages").mkdir()
    # Images that run as another user (the agent's, uid 1000) must reach it: pyenv's usual home, /root,
    # is 700 in Debian's root filesystem.
    for directory in target.relative_to(rootfs).parents:
        path = rootfs / directory
        path.chmod(path.stat().st_mode | 0o555)
    for name in ("python3", f"python{PYTHON_SERIES}", "python"):
        link = rootfs / "usr" / "local" / "bin" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(python / "bin" / f"python{PYTHON_SERIES}")
    check = subprocess.run(  # as a user other than root, as the agent's image runs
        ["chroot", "--userspec=1000:1000", str(rootfs), "/usr/local/bin/python3", "-c", SMOKE_TEST],
        capture_output=True,
        text=True,
        check=False,
    )
    shutil.rmtree(rootfs / "tmp" / "smoke-venv", ignore_errors=True)
    if check.returncode != 0:
        raise ImageBuildError(
            f"{python} does not run on Debian {DEBIAN_SUITE}'s libraries: {check.stderr.strip()[-500:]}"
        )


def bootstrap(argv: list[str]) -> None:
    """Run a root-filesystem maker (debootstrap, mmdebstrap); ImageBuildError with its last lines."""
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
        raise ImageBuildError(f"{Path(argv[0]).name} failed (status {result.returncode}):\n{tail}")


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
        f"making the root filesystem of {LOCAL_BASE} from Debian {DEBIAN_SUITE} packages (debootstrap) "
        f"and {machine_python()} ..."
    )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="base-rootfs-", dir=cache) as tmp:
        rootfs = Path(tmp) / "rootfs"
        include = f"--include={','.join(DEBIAN_PACKAGES)}"
        bootstrap([debootstrap, "--variant=minbase", include, DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR])
        _copy_python(machine_python(), rootfs)
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


def present_for(client: docker.DockerClient, image: str, platform: str) -> bool:
    """`image` is in the engine, built for `platform` (one tag holds one platform's image)."""
    try:
        return ImagePlatform.from_inspect(client.api.inspect_image(image)).platform == platform
    except docker.errors.ImageNotFound:
        return False


def pulled_or_local(
    client: docker.DockerClient, wanted: str, platform: str, progress: Progress, local: Callable[[], str]
) -> str:
    """`wanted` for `platform` when present or pullable, else `local()`: a local base, made once."""
    if present_for(client, wanted, platform):
        return wanted
    repository, _, tag = wanted.partition(":")
    try:
        client.images.pull(repository, tag=tag or "latest", platform=platform)
        return wanted
    except docker.errors.APIError as exc:
        progress(f"cannot pull {wanted} for {platform} ({exc.explanation or exc}); using a local Debian base")
    return local()


def resolve_base(client: docker.DockerClient, wanted: str = DEFAULT_BASE, progress: Progress = quiet) -> str:
    """`wanted` for the engine's platform when present or pullable, else the local Debian base (built
    once, then reused). (linux/arm64 on an amd64 engine: arm64_base.py.)"""

    def local() -> str:
        return LOCAL_BASE if _local_base_is_current(client) else build_local_base(client, progress)

    return pulled_or_local(client, wanted, engine_platform(client), progress, local)
