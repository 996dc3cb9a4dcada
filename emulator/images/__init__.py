"""The repository's container images, built with the Docker SDK when they are missing or out of date
(what `python -m emulator up --runtime docker` and the docker tests run first).

`build.ensure_images(images, specs, ...)` builds each named image that the engine does not have, or
whose sources changed since it was built (the `SOURCE_LABEL` it carries), from its Dockerfile
(`ImageSpec.dockerfile`, relative to the repository root, which is the build context) and its build
arguments (`ImageSpec.build_args`: one Dockerfile builds every model container's CPU image), and reports each
build step through `progress`, as `docker compose up --build` does (unchanged steps come from the
cache). Builds are offline- and proxy-friendly:

- The base (`base.py`). Every Dockerfile starts with `ARG BASE_IMAGE=python:3.12-slim`. When that image
  is neither present nor pullable (no Docker Hub: offline machines, registries only through a company
  proxy), a local base is made once from Debian's packages.
- Trust, index and proxy (`build_config.py`). pip inside the build uses the machine's CA bundle and
  its index settings, written into the build context's `build-config/` folder, which only the
  Dockerfiles' build stage reads, so neither reaches the image; the proxy variables become build
  arguments, which Docker leaves out of the image history. Builds use the host's network (a proxy on
  127.0.0.1 works).

This package: what its modules share (the error, the progress callback, the engine).
"""

from __future__ import annotations

from collections.abc import Callable

import docker
import docker.errors

Progress = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """An image is missing and cannot be built (or building it failed)."""


def quiet(_: str) -> None:
    """The default `progress`: report nothing."""
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
