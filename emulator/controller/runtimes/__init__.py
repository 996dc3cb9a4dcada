"""Runtimes start replicas of a model container: `process` (local commands) or `docker`.

The controller only sees this interface: start a replica of an image with an environment and a
model directory, learn its port, wait for its exit, stop it (SIGTERM, then SIGKILL after a grace);
the emulator closes the runtime when it exits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from emulator.config import EmulatorConfig

BIDI_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"
STAND_IN_LABEL = "voice-agent-aws.stands-in-for"
"""On an image the emulator built for its engine's own platform in place of the one it runs on in AWS
(the agent's linux/arm64, built for linux/amd64 because emulating arm64 is slow): that platform. The
emulated AgentCore accepts such an image for an ARM64 runtime and says so in its events."""


@dataclass(frozen=True)
class ImagePlatform:
    """What an image is built for, as the engine reports it (`docker image inspect`: Os/Architecture)."""

    platform: str
    """`linux/arm64`, `linux/amd64`."""
    stands_in_for: str | None = None
    """Its STAND_IN_LABEL: the platform it stands in for, when the emulator built it for another."""

    @classmethod
    def from_inspect(cls, attrs: dict[str, object]) -> ImagePlatform:
        labels = (attrs.get("Config") or {}).get("Labels") or {}  # type: ignore[union-attr]
        return cls(
            f"{attrs.get('Os', 'linux')}/{attrs.get('Architecture', 'unknown')}", labels.get(STAND_IN_LABEL)
        )


class RuntimeUnavailable(RuntimeError):
    """The runtime cannot run here (no Docker engine, no local command for an image, ...)."""


@dataclass(frozen=True)
class StartRequest:
    replica_id: str
    image: str
    environment: dict[str, str]
    model_dir: Path | None
    log_path: Path
    args: tuple[str, ...] = ("serve",)
    """Arguments after the image (`docker run IMAGE serve` on SageMaker; none on AgentCore, which
    runs the image's own command and sends traffic to port 8080)."""


class ReplicaHandle(Protocol):
    host: str
    port: int
    ident: str
    """What an operator looks for: a pid or a container id."""

    async def wait(self) -> int:
        """Wait for the replica to exit; return its exit status."""
        ...

    async def stop(self, grace_s: float) -> None:
        """SIGTERM, SIGKILL after `grace_s`; return once nothing of it runs."""
        ...


class Runtime(Protocol):
    kind: str

    async def check(self) -> None:
        """Raise RuntimeUnavailable when this runtime cannot start anything here."""
        ...

    def check_image(self, image: str) -> None:
        """Raise RuntimeUnavailable when `image` cannot be run (checked at CreateModel)."""
        ...

    async def is_bidirectional(self, image: str) -> bool:
        """Whether the image carries the bidirectional-streaming capability label."""
        ...

    def image_platform(self, image: str) -> ImagePlatform | None:
        """What `image` is built for; None where the runtime cannot tell (local commands, an image the
        engine does not have yet)."""
        ...

    async def start(self, request: StartRequest) -> ReplicaHandle: ...

    def close(self) -> None:
        """Release what the runtime holds open (the emulator is exiting; its replicas are stopped)."""
        ...


def make_runtime(config: EmulatorConfig) -> Runtime:
    if config.runtime == "process":
        from emulator.controller.runtimes.process import ProcessRuntime

        return ProcessRuntime(config.images, host=config.host)
    if config.runtime == "docker":
        from emulator.controller.runtimes.docker import DockerRuntime

        return DockerRuntime(host=config.host, home=config.home_dir, images=config.images)
    raise RuntimeUnavailable(f"unknown runtime {config.runtime!r}: use 'process' or 'docker'")
