"""The local images that stand for a CloudFormation stack's image assets (what the CDK toolkit pushes
to ECR): built from the asset's Dockerfile with the emulator's builder, named after it and the asset
hash, and removed with the stack (emulator/services/cloudformation asks through its `ImageAssets`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import PurePosixPath

import docker.errors

from emulator.images import docker_client, image_exists
from emulator.images.base import resolve_base
from emulator.images.build import BuildRequest, build_image
from emulator.services.cloudformation.shapes import ImageAsset

REPOSITORY = "voice-agent-aws-rehearsal"


def image_tag(dockerfile: str, asset_hash: str) -> str:
    """`tts/Dockerfile.gpu` -> `voice-agent-aws-rehearsal/tts-gpu:<hash>`; `agent/Dockerfile` ->
    `.../agent:<hash>` (the emulator runs an image whose name ends in `agent` on the host's network,
    where it reaches the emulator)."""
    path = PurePosixPath(dockerfile)
    suffix = path.suffix.lstrip(".")
    name = path.parent.name + (f"-{suffix}" if suffix else "")
    return f"{REPOSITORY}/{name}:{asset_hash[:16]}"


class DockerImageAssets:
    def __init__(self, base_image: str) -> None:
        self.base_image = base_image
        """The base every Dockerfile starts from (`EmulatorConfig.base_image`; a local one when offline)."""

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> str:
        """The asset's local tag, built (with its build arguments) unless the engine has it already; the
        asset's hash covers its build arguments, so the tag does too."""
        tag = image_tag(asset.dockerfile, asset.hash)
        client = docker_client()
        if image_exists(client, tag):
            progress(f"image {tag} already built")
            return tag
        request = BuildRequest(tag, asset.dockerfile, dict(asset.build_args))
        build_image(client, request, resolve_base(client, self.base_image, progress), progress)
        return tag

    def remove(self, tag: str) -> bool:
        """Remove the tag; False when it is still there (a container uses it)."""
        client = docker_client()
        with contextlib.suppress(docker.errors.APIError):  # ImageNotFound included: gone already
            client.images.remove(tag)
        return not image_exists(client, tag)
