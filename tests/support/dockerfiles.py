"""Dockerfiles read as text, for the image tests: each image as its builders build it (its Dockerfile and
its build arguments, substituted), its instructions, its final stage, its environment and what it runs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from deploy.product import STT_BUILD_ARGS, TTS_BUILD_ARGS
from emulator.config import ImageSpec, default_images
from emulator.controller.runtimes import BIDI_LABEL
from emulator.manifest import VOICE_MANIFEST, load_manifest
from tests.support.paths import REPO

LABEL = f"{BIDI_LABEL}=true"
"""What SageMaker reads before it opens an image's bidirectional stream."""
KIT_DOCKERFILE = REPO / "container_kit" / "Dockerfile"
# The kit's ENTRYPOINT: it execs `python -m $CONTAINER_PACKAGE` (container_kit/__main__.py).
KIT_ENTRYPOINT = ["python", "-m", "container_kit"]


def known_images() -> dict[str, ImageSpec]:
    """Every image the emulator builds here: its own (echo) and the product's, as its manifests give them
    (compose/voice.yaml's hold them all; deploy/product.py writes them)."""
    return {**default_images(), **load_manifest(VOICE_MANIFEST).images}


@dataclass(frozen=True)
class ImageBuild:
    """One image as it is built: its Dockerfile and its build arguments."""

    dockerfile: Path
    build_args: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        package = self.build_args.get("PACKAGE")
        return str(self.dockerfile.relative_to(REPO)) + (f" PACKAGE={package}" if package else "")

    def text(self) -> str:
        """The Dockerfile with each of its build arguments (`${NAME}`, `$NAME`) replaced by its value."""

        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2)
            return self.build_args.get(name, match.group(0))

        return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, self.dockerfile.read_text())


TTS_CPU = ImageBuild(KIT_DOCKERFILE, TTS_BUILD_ARGS)
STT_CPU = ImageBuild(KIT_DOCKERFILE, STT_BUILD_ARGS)
TTS_BUILDS = [TTS_CPU, ImageBuild(REPO / "tts" / "Dockerfile.gpu")]
STT_BUILDS = [STT_CPU, ImageBuild(REPO / "stt" / "Dockerfile.gpu")]


def builds_of(dockerfile: Path) -> list[ImageBuild]:
    """How `dockerfile` is built: with each set of build arguments the emulator's images give it
    (`known_images`), or, a Dockerfile they do not name with any, as it is."""
    named = {
        tuple(sorted(spec.build_args.items()))
        for spec in known_images().values()
        if spec.dockerfile and REPO / spec.dockerfile == dockerfile and spec.build_args
    }
    return [ImageBuild(dockerfile, dict(args)) for args in sorted(named)] or [ImageBuild(dockerfile)]


def instructions(image: ImageBuild | Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    build = image if isinstance(image, ImageBuild) else ImageBuild(image)
    text = re.sub(r"\\\n", " ", build.text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def final_stage(image: ImageBuild | Path) -> list[tuple[str, str]]:
    steps = instructions(image)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def environment(image: ImageBuild | Path) -> dict[str, str]:
    """The final stage's ENV, every `NAME=value` of its ENV lines."""
    pairs = " ".join(args for keyword, args in final_stage(image) if keyword == "ENV")
    return dict(re.findall(r"(\w+)=(\S+)", pairs))


def runs(image: ImageBuild | Path) -> list[str]:
    """The command the image runs: its exec-form ENTRYPOINT, the kit's read as the `python -m <package>`
    it execs. A shell-form ENTRYPOINT (or none) fails the JSON parse: SageMaker needs exec form."""
    [entrypoint] = [json.loads(args) for keyword, args in final_stage(image) if keyword == "ENTRYPOINT"]
    if entrypoint == KIT_ENTRYPOINT:
        return ["python", "-m", environment(image)["CONTAINER_PACKAGE"]]
    return entrypoint
