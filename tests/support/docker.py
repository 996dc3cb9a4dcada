"""The Docker engine and the images that the docker tests use.

Docker-marked tests run against the engine that answers (`scripts/test` starts one where the machine
allows it). Where none answers they skip with the reason, except in CI (`CI=true`), where they fail:
CI must run them. The images come from the repository's Dockerfiles through `emulator.images`, the
same code as `python -m emulator up --runtime docker`, from the Dockerfiles the manifests name, built once
per test session when missing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Iterator, Mapping

import docker
import pytest

from emulator.config import ImageSpec
from emulator.controller.runtimes import RuntimeUnavailable
from emulator.controller.runtimes.docker import connect
from emulator.images.build import ensure_images
from tests.support.dockerfiles import known_images

# testcontainers' reaper (Ryuk) is an image from Docker Hub; every test removes its own containers.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
# The engine runs on this host and publishes on 127.0.0.1; testcontainers would take a /.dockerenv here
# for "inside a container" and aim at the bridge gateway instead.
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")

TTS_IMAGE = "voice-agent-aws/kokoro-tts:latest"
STT_IMAGE = "voice-agent-aws/whisper-stt:latest"
ECHO_IMAGE = "voice-agent-aws/echo:latest"


@functools.cache
def docker_unavailable() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        connect().ping()
    except (RuntimeUnavailable, docker.errors.DockerException) as exc:
        return str(exc)
    return None


def require_docker() -> None:
    """Skip without an engine; in CI fail instead."""
    reason = docker_unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs the docker tests, but {reason}", pytrace=False)
    pytest.skip(reason)


@functools.cache
def built(image: str) -> str:
    """`image` in the engine, built from its Dockerfile (progress on stderr) when missing."""
    ensure_images([image], known_images(), progress=lambda line: print(line, file=sys.stderr, flush=True))
    return image


def built_from(image: str, specs: Mapping[str, ImageSpec]) -> str:
    """`image` in the engine, built from the Dockerfile `specs` name for it when missing or stale (skipped
    without an engine, as `require_docker`); the time it took and its size on stderr."""
    require_docker()
    started = time.monotonic()
    ensure_images([image], specs, progress=lambda line: print(line, file=sys.stderr, flush=True))
    size = docker_client().images.get(image).attrs["Size"]
    print(f"{image}: ready in {time.monotonic() - started:.0f} s, {size / 1e9:.1f} GB", file=sys.stderr)
    return image


def docker_client() -> docker.DockerClient:
    return connect()


@contextlib.contextmanager
def serving(image: str, startup_s: float = 180) -> Iterator[str]:
    """`image` started as SageMaker starts it (`docker run IMAGE serve`) on a loopback port, once its
    `/ping` says 200: its URL."""
    # testcontainers reads its settings when it is imported: after this module's os.environ lines.
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    container = (
        DockerContainer(image)
        .with_command("serve")
        .waiting_for(HttpWaitStrategy(8080, "/ping").for_status_code(200).with_startup_timeout(startup_s))
    )
    container.ports["8080/tcp"] = ("127.0.0.1", None)  # loopback only (with_bind_ports takes no address)
    with container:
        yield f"http://127.0.0.1:{container.get_exposed_port(8080)}"


def inside(image: str, code: str) -> list[bytes]:
    """The words `python -c code` prints inside `image` (its entry point set aside)."""
    return docker_client().containers.run(image, entrypoint=["python", "-c", code], remove=True).split()
