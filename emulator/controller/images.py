"""The repository's container images, built with the Docker SDK when they are missing or out of date.

`ensure_images(images, specs, ...)` builds each named image that the engine does not have, or whose
sources changed since it was built (the `SOURCE_LABEL` it carries), from its Dockerfile
(`ImageSpec.dockerfile`, relative to the repository root, which is the build context), and reports each
build step through `progress`, as `docker compose up --build` does (unchanged steps come from the
cache). Builds are offline- and proxy-friendly:

- The base. Every Dockerfile starts with `ARG BASE_IMAGE=python:3.12-slim`. When that image is neither
  present nor pullable (no Docker Hub: offline machines, registries only through a company proxy), a
  local base is made once from Debian's packages: `debootstrap --variant=minbase` of trixie with
  python3 and python3-venv (Python 3.13), imported through the SDK as `LOCAL_BASE`. Its label
  `LOCAL_BASE_LABEL` holds a hash of the recipe, so later builds reuse it and a changed recipe rebuilds;
  the root filesystem is also kept as a tarball in `BASE_CACHE`, so an engine that lost its images
  (a fresh dockerd, another storage driver) gets the base back in seconds.
- Trust and index. pip inside the build uses the machine's CA bundle (`SSL_CERT_FILE`, `PIP_CERT`,
  `REQUESTS_CA_BUNDLE`, or pip's `cert` setting) and its index settings (`pip config list`: index-url,
  extra-index-url, trusted-host, including `PIP_*` variables), written into the build context as
  `build-config/ca.pem` and `build-config/pip.conf`. Only the Dockerfiles' build stage reads them; the
  final stage copies the virtual environment, so neither reaches the image. (The SDK drives the classic
  builder, which has no `RUN --mount=type=secret`; Debian's docker.io 20.10 has BuildKit only through
  its CLI, so the build-stage split is what keeps them out of the image's layers.)
- The network. Builds use the host's network (a proxy on 127.0.0.1 works) and get the proxy variables
  as build arguments, which Docker leaves out of the image history.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors
from docker.utils.build import create_archive, exclude_paths

from emulator.config import ImageSpec
from emulator.controller.runtimes.process import resolve_image

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BASE = "python:3.12-slim"
LOCAL_BASE = "voice-agent-aws/python-base:trixie"
LOCAL_BASE_LABEL = "voice-agent-aws.base-recipe"
SOURCE_LABEL = "voice-agent-aws.source"
"""A hash of the build context an image was built from: a changed source rebuilds it (cached steps
stay cached), an unchanged one is used as it is."""
DEBIAN_SUITE = "trixie"
DEBIAN_PACKAGES = ("python3", "python3-venv", "ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_CACHE = Path("~/.cache/voice-agent-aws/base-image")
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "NO_PROXY", "ALL_PROXY")
BUILD_CONFIG = "build-config"
"""The folder of the build context that the Dockerfiles' build stage reads (see build-config/README.md)."""

Progress = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """An image is missing and cannot be built (or building it failed)."""


def _quiet(_: str) -> None:
    return None


def docker_client() -> docker.DockerClient:
    """The engine from the environment (DOCKER_HOST, or the local socket), API version negotiated."""
    try:
        return docker.from_env(version="auto")
    except docker.errors.DockerException as exc:
        raise ImageBuildError(f"no Docker engine: {exc}") from exc


def image_exists(client: docker.DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


# the base ----------------------------------------------------------------------------------------


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


def build_local_base(client: docker.DockerClient, progress: Progress = _quiet) -> str:
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


def resolve_base(client: docker.DockerClient, wanted: str = DEFAULT_BASE, progress: Progress = _quiet) -> str:
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


# trust and index ---------------------------------------------------------------------------------


def pip_settings(python: str = sys.executable) -> dict[str, str]:
    """pip's effective settings (files and PIP_* variables), as `pip config list` shows them."""
    try:
        result = subprocess.run(
            [python, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings: dict[str, str] = {}
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            settings[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    return settings


def ca_bundle(environ: Mapping[str, str], pip: Mapping[str, str]) -> Path | None:
    """The machine's CA bundle when one is configured for Python or pip."""
    for candidate in (
        environ.get("SSL_CERT_FILE"),
        environ.get("PIP_CERT"),
        environ.get("REQUESTS_CA_BUNDLE"),
        pip.get("cert"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _remote(urls: str) -> list[str]:
    """Index URLs a build can reach (a `file://` index on this machine is not inside the build)."""
    return [url for url in urls.split() if url.startswith(("http://", "https://"))]


def build_config_files(environ: Mapping[str, str], pip: Mapping[str, str]) -> dict[str, str]:
    """The build context's build-config/ files: pip.conf (always) and ca.pem (when configured)."""
    files: dict[str, str] = {}
    lines = ["[global]"]
    bundle = ca_bundle(environ, pip)
    if bundle is not None:
        files[f"{BUILD_CONFIG}/ca.pem"] = bundle.read_text()
        lines.append(f"cert = /tmp/{BUILD_CONFIG}/ca.pem")
    index = _remote(pip.get("index-url", ""))
    if index:
        lines.append(f"index-url = {index[0]}")
    extra = _remote(pip.get("extra-index-url", ""))
    if extra:
        lines.append(f"extra-index-url = {' '.join(extra)}")
    if pip.get("trusted-host"):
        lines.append(f"trusted-host = {pip['trusted-host']}")
    for name in ("timeout", "default-timeout", "retries"):
        if pip.get(name):
            lines.append(f"{name} = {pip[name]}")
    files[f"{BUILD_CONFIG}/pip.conf"] = "\n".join(lines) + "\n"
    return files


def proxy_build_args(environ: Mapping[str, str]) -> dict[str, str]:
    args: dict[str, str] = {}
    for name in PROXY_VARIABLES:
        for variant in (name, name.lower()):
            if environ.get(variant):
                args[variant] = environ[variant]
    return args


# building ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildRequest:
    image: str
    dockerfile: str
    """Relative to the repository root (the build context)."""


def _context_files(dockerfile: str) -> list[str]:
    ignore = REPO / ".dockerignore"
    patterns = [p for p in ignore.read_text().splitlines() if p.strip() and not p.startswith("#")]
    files = sorted(exclude_paths(str(REPO), patterns, dockerfile=dockerfile))
    if dockerfile not in files:
        files.append(dockerfile)
    return files


def source_hash(dockerfile: str) -> str:
    """The hash of what a build of `dockerfile` would send (file names and contents)."""
    digest = hashlib.sha256()
    for name in _context_files(dockerfile):
        path = REPO / name
        if path.is_file() and not path.is_symlink():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _context(dockerfile: str, extra: Mapping[str, str]) -> IO[bytes]:
    return create_archive(str(REPO), files=_context_files(dockerfile), extra_files=list(extra.items()))


def build_image(
    client: docker.DockerClient,
    request: BuildRequest,
    base: str,
    progress: Progress = _quiet,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Build `request.image` from its Dockerfile on `base`, streaming each step to `progress`."""
    env = os.environ if environ is None else environ
    if not (REPO / request.dockerfile).is_file():
        raise ImageBuildError(f"no Dockerfile {request.dockerfile} under {REPO} to build {request.image}")
    name = request.image.rsplit("/", 1)[-1]
    context = _context(request.dockerfile, build_config_files(env, pip_settings()))
    started = time.monotonic()
    progress(f"[{name}] building {request.image} from {request.dockerfile} (base {base})")
    last: list[str] = []
    try:
        with context:
            for chunk in client.api.build(
                fileobj=context,
                custom_context=True,
                dockerfile=request.dockerfile,
                tag=request.image,
                buildargs={"BASE_IMAGE": base, **proxy_build_args(env)},
                labels={SOURCE_LABEL: source_hash(request.dockerfile)},
                network_mode="host",
                rm=True,
                forcerm=True,
                decode=True,
            ):
                if "error" in chunk:
                    detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                    tail = "\n".join(last[-10:])
                    raise ImageBuildError(f"building {request.image} failed: {detail.strip()}\n{tail}")
                for line in str(chunk.get("stream", "")).splitlines():
                    if line.strip():
                        last.append(line)
                        if line.startswith("Step "):
                            progress(f"[{name}] {line}")
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"building {request.image} failed: {exc.explanation or exc}") from exc
    progress(f"[{name}] built {request.image} in {time.monotonic() - started:.0f} s")


def build_requests(images: Iterable[str], specs: Mapping[str, ImageSpec]) -> list[BuildRequest]:
    """The image -> Dockerfile pairs for `images` (an image no spec builds raises ImageBuildError)."""
    requests = []
    for image in dict.fromkeys(images):
        spec = resolve_image(specs, image)
        if spec is None or spec.dockerfile is None:
            known = ", ".join(sorted(k for k, s in specs.items() if s.dockerfile)) or "none"
            raise ImageBuildError(
                f"image {image} is not present and no Dockerfile is known for it (buildable: {known}); "
                f"build or pull it, or map it under `images:` with a `dockerfile:`"
            )
        requests.append(BuildRequest(image, spec.dockerfile))
    return requests


def missing_images(client: docker.DockerClient, images: Iterable[str]) -> list[str]:
    return [image for image in dict.fromkeys(images) if not image_exists(client, image)]


def stale_images(
    client: docker.DockerClient, images: Iterable[str], specs: Mapping[str, ImageSpec]
) -> list[str]:
    """Present images built from this repository whose sources changed since (their label says)."""
    stale = []
    for image in dict.fromkeys(images):
        spec = resolve_image(specs, image)
        if spec is None or spec.dockerfile is None or not image_exists(client, image):
            continue
        labels = client.images.get(image).labels or {}
        if labels.get(SOURCE_LABEL) != source_hash(spec.dockerfile):
            stale.append(image)
    return stale


def ensure_images(
    images: Iterable[str],
    specs: Mapping[str, ImageSpec],
    *,
    build: bool = True,
    base: str = DEFAULT_BASE,
    progress: Progress = _quiet,
    client: docker.DockerClient | None = None,
) -> list[str]:
    """Build the missing ones of `images`, and those whose sources in this repository changed since
    they were built (or, with `build=False`, refuse the missing and use the present as they are);
    return what was built."""
    client = client or docker_client()
    missing = missing_images(client, images)
    if not build:
        if missing:
            raise ImageBuildError(
                f"image(s) {', '.join(missing)} not present and building is off (--no-build); "
                "build them (drop --no-build) or pull them first"
            )
        return []
    wanted = [*missing, *stale_images(client, images, specs)]
    if not wanted:
        return []
    requests = build_requests(wanted, specs)
    chosen = resolve_base(client, base, progress)
    for request in requests:
        build_image(client, request, chosen, progress)
    return [r.image for r in requests]
