"""The local images that stand for a CloudFormation stack's image assets (what the CDK toolkit pushes
to ECR): built from the asset's Dockerfile with the emulator's builder, named after it and the asset
hash, and removed with the stack (emulator/services/cloudformation asks through its `ImageAssets`).

An asset that names a platform (the agent's linux/arm64) is built for it where the engine runs it
(natively, or under QEMU: emulator/images/platforms.py), as AWS will run it; else, or when the stack
asks for the engine's own platform (`deploy aws --target local --host-platform`), for the engine's own,
labelled as standing in for it. Either way the stack's events say which, and why."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import PurePosixPath

import docker
import docker.errors

from emulator.controller.runtimes import ImagePlatform
from emulator.images import docker_client, image_exists
from emulator.images.build import BuildRequest, base_for, build_image
from emulator.images.platforms import cannot_run, engine_platform
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

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> tuple[str, str | None]:
        """The asset's local tag, built unless the engine has it for the platform chosen; with the
        sentence that says what that platform is, when the asset names one."""
        client = docker_client()
        build = _choose(client, asset)
        if _built(client, build):
            progress(f"image {build.image} already built")
        else:
            base = base_for(client, self.base_image, build.platform, progress)
            build_image(client, build, base, progress)
        if asset.platform is None:
            return build.image, None
        if build.platform == asset.platform:
            return build.image, f"the image of {asset.dockerfile} is {asset.platform}, as on AWS"
        own = engine_platform(client)
        why = (
            "as the stack asks: --host-platform"
            if asset.host_platform
            else cannot_run(client, asset.platform)
        )
        return build.image, (
            f"the image of {asset.dockerfile} is {asset.platform} on AWS; the emulator built it for its "
            f"engine's {own} instead ({why})"
        )

    def remove(self, tag: str) -> bool:
        """Remove the tag; False when it is still there (a container uses it)."""
        client = docker_client()
        with contextlib.suppress(docker.errors.APIError):  # ImageNotFound included: gone already
            client.images.remove(tag)
        return not image_exists(client, tag)


def _choose(client: docker.DockerClient, asset: ImageAsset) -> BuildRequest:
    """Build for the asset's platform where the engine runs it, unless the stack asks for the engine's."""
    tag = image_tag(asset.dockerfile, asset.asset_hash)
    platform, args = asset.platform, dict(asset.build_args)
    if platform is None or asset.host_platform or cannot_run(client, platform) is not None:
        return BuildRequest(tag, asset.dockerfile, args, stands_in_for=platform)
    return BuildRequest(tag, asset.dockerfile, args, platform=platform)


def _built(client: docker.DockerClient, build: BuildRequest) -> bool:
    """The tag is there, built for the platform chosen (an earlier rehearsal may have chosen the other)."""
    if not image_exists(client, build.image):
        return False
    found = ImagePlatform.from_inspect(client.api.inspect_image(build.image))
    return found.platform == (build.platform or engine_platform(client))
