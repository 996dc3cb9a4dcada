"""Building the images from the repository's Dockerfiles: `ensure_images` builds what is missing or
out of date (its sources changed since it was built), on the base `base.resolve_base` picks, with the
machine's settings from `build_config`, streaming each step to `progress`.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import docker
import docker.errors
from docker.utils.build import create_archive, exclude_paths

from emulator.config import ImageSpec
from emulator.controller.paths import UnsafePath, within
from emulator.controller.runtimes import STAND_IN_LABEL, ImagePlatform
from emulator.controller.runtimes.process import resolve_image
from emulator.images import ImageBuildError, Progress, docker_client, image_exists, quiet
from emulator.images.arm64_base import PLATFORM as ARM64
from emulator.images.arm64_base import resolve_arm64_base
from emulator.images.base import DEFAULT_BASE, resolve_base
from emulator.images.build_config import build_config_files, pip_settings, proxy_build_args
from emulator.images.platforms import cannot_run, engine_platform

REPO = Path(__file__).resolve().parents[2]
# The terminal colours Docker wraps a step's stderr in (`\x1b[91m...\x1b[0m`): kept out of the log
# lines an ImageBuildError quotes, which reach stack events and the deploy command's output.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
SOURCE_LABEL = "voice-agent-aws.source"
"""A hash of the build context an image was built from: a changed source rebuilds it (cached steps
stay cached), an unchanged one is used as it is."""


@dataclass(frozen=True)
class BuildRequest:
    image: str
    dockerfile: str
    """Relative to the repository root (the build context), and inside it: a manifest or a template
    names it, and a build reads it and sends its directory's neighbours."""
    build_args: Mapping[str, str] = field(default_factory=dict)
    """The Dockerfile's build arguments (`ImageSpec.build_args`, an image asset's `dockerBuildArgs`);
    BASE_IMAGE is the builder's own (`base.resolve_base`), never one of them."""
    platform: str | None = None
    """The platform to build for (`linux/arm64`, emulated on an amd64 engine); None: the engine's own."""
    stands_in_for: str | None = None
    """The platform the image runs on in AWS, when it is built for the engine's own instead (faster):
    the image's STAND_IN_LABEL, which the emulated AgentCore accepts in its place."""

    def __post_init__(self) -> None:
        repository_file(self.dockerfile)
        if "BASE_IMAGE" in self.build_args:
            raise ImageBuildError(
                f"{self.dockerfile}: BASE_IMAGE is the builder's to choose (EMULATOR_BASE_IMAGE, "
                "--base-image), not a build argument"
            )


def repository_file(dockerfile: str) -> Path:
    """The Dockerfile's path; ImageBuildError for one outside the repository."""
    try:
        return within(REPO, dockerfile)
    except UnsafePath as exc:
        raise ImageBuildError(f"the Dockerfile {dockerfile[:200]!r} is not in this repository: {exc}") from (
            exc
        )


def _context_files(dockerfile: str) -> list[str]:
    ignore = REPO / ".dockerignore"
    patterns = [p for p in ignore.read_text().splitlines() if p.strip() and not p.startswith("#")]
    files = sorted(exclude_paths(str(REPO), patterns, dockerfile=dockerfile))
    if dockerfile not in files:
        files.append(dockerfile)
    return files


def source_hash(dockerfile: str, build_args: Mapping[str, str] | None = None) -> str:
    """The hash of what a build of `dockerfile` would send (file names and contents) and of its build
    arguments (one Dockerfile builds several images)."""
    repository_file(dockerfile)
    digest = hashlib.sha256()
    for name, value in sorted((build_args or {}).items()):
        digest.update(f"{name}={value}".encode() + b"\0")
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
    progress: Progress = quiet,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Build `request.image` from its Dockerfile on `base`, streaming each step to `progress`."""
    env = os.environ if environ is None else environ
    if not (REPO / request.dockerfile).is_file():
        raise ImageBuildError(f"no Dockerfile {request.dockerfile} under {REPO} to build {request.image}")
    name = request.image.rsplit("/", 1)[-1]
    context = _context(request.dockerfile, build_config_files(env, pip_settings()))
    started = time.monotonic()
    labels = {SOURCE_LABEL: source_hash(request.dockerfile, request.build_args)}
    built_for = request.platform or engine_platform(client)
    if request.stands_in_for and request.stands_in_for != built_for:
        labels[STAND_IN_LABEL] = request.stands_in_for
        progress(
            f"[{name}] {request.image} runs on {request.stands_in_for} in AWS; built for {built_for} here"
        )
    target = f" for {request.platform}" if request.platform else ""
    arguments = "".join(f", {key}={value}" for key, value in request.build_args.items())
    progress(f"[{name}] building {request.image}{target} from {request.dockerfile} (base {base}{arguments})")
    last: list[str] = []
    try:
        with context:
            for chunk in client.api.build(
                fileobj=context,
                custom_context=True,
                dockerfile=request.dockerfile,
                tag=request.image,
                buildargs={**request.build_args, "BASE_IMAGE": base, **proxy_build_args(env)},
                labels=labels,
                platform=request.platform,
                network_mode="host",
                rm=True,
                forcerm=True,
                decode=True,
            ):
                if "error" in chunk:
                    detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
                    tail = "\n".join(last[-10:])
                    raise ImageBuildError(f"building {request.image} failed: {detail.strip()}\n{tail}")
                for line in _ANSI.sub("", str(chunk.get("stream", ""))).splitlines():
                    if line.strip():
                        last.append(line)
                        if line.startswith("Step "):
                            progress(f"[{name}] {line}")
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"building {request.image} failed: {exc.explanation or exc}") from exc
    progress(f"[{name}] built {request.image} in {time.monotonic() - started:.0f} s")


def base_for(
    client: docker.DockerClient, wanted: str, platform: str | None, progress: Progress = quiet
) -> str:
    """The base to build `platform`'s image on (None: the engine's own): `wanted` when present or
    pullable for it, else a local one; ImageBuildError for a platform the engine cannot run."""
    if platform is None or platform == engine_platform(client):
        return resolve_base(client, wanted, progress)
    why_not = cannot_run(client, platform)
    if why_not is not None:
        raise ImageBuildError(f"cannot build {platform}: {why_not}")
    if platform != ARM64:
        raise ImageBuildError(f"cannot build {platform}: the builder makes local bases only for {ARM64}")
    return resolve_arm64_base(client, wanted, progress)


def build_requests(images: Iterable[str], specs: Mapping[str, ImageSpec]) -> list[BuildRequest]:
    """The image -> Dockerfile pairs for `images` (an image no spec builds raises ImageBuildError), each
    built for the engine's platform: one that runs on another in AWS (the agent's linux/arm64) is labelled
    as standing in for it."""
    requests = []
    for image in dict.fromkeys(images):
        spec = resolve_image(specs, image)
        if spec is None or spec.dockerfile is None:
            known = ", ".join(sorted(k for k, s in specs.items() if s.dockerfile)) or "none"
            raise ImageBuildError(
                f"image {image} is not present and no Dockerfile is known for it (buildable: {known}); "
                f"build or pull it, or map it under `images:` with a `dockerfile:`"
            )
        requests.append(BuildRequest(image, spec.dockerfile, spec.build_args, stands_in_for=spec.platform))
    return requests


def missing_images(client: docker.DockerClient, images: Iterable[str]) -> list[str]:
    return [image for image in dict.fromkeys(images) if not image_exists(client, image)]


def stale_images(
    client: docker.DockerClient, images: Iterable[str], specs: Mapping[str, ImageSpec]
) -> list[str]:
    """Present images built from this repository whose sources changed since (their label says), or
    built for neither the platform they run on in AWS nor as a stand-in for it (before the label)."""
    stale = []
    for image in dict.fromkeys(images):
        spec = resolve_image(specs, image)
        if spec is None or spec.dockerfile is None or not image_exists(client, image):
            continue
        attrs = client.api.inspect_image(image)
        found = ImagePlatform.from_inspect(attrs)
        labels = (attrs.get("Config") or {}).get("Labels") or {}
        if labels.get(SOURCE_LABEL) != source_hash(spec.dockerfile, spec.build_args) or (
            spec.platform and spec.platform not in (found.platform, found.stands_in_for)
        ):
            stale.append(image)
    return stale


def ensure_images(
    images: Iterable[str],
    specs: Mapping[str, ImageSpec],
    *,
    build: bool = True,
    base: str = DEFAULT_BASE,
    progress: Progress = quiet,
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
