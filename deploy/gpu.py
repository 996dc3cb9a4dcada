"""A GPU image and the AMI it runs on agree by construction: one table of SageMaker's GPU inference
AMIs (AMI -> NVIDIA driver -> the newest CUDA it runs), the CUDA build of the library that the image
computes with (torch for tts, CTranslate2 for stt; read from the locked requirements its Dockerfile
installs), and the choice between them.

Which CUDA a driver runs (NVIDIA's CUDA compatibility guide): every CUDA 12.x user space runs on a
driver >= 525 (minor-version compatibility), CUDA 13.x needs >= 580, and a newer driver runs every older
CUDA. So an AMI runs a build when the build's CUDA major is at most that of the AMI's own CUDA.
The AMIs are the values of `ProductionVariant.InferenceAmiVersion` in botocore 1.44's SageMaker model.

Without `--inference-ami` the endpoint gets the newest AMI in the table that runs the image (today
`al2023-ami-sagemaker-inference-gpu-4-1` for CUDA 12 and 13 alike: its driver 580 runs CUDA 12.8
natively, without the minor-version limits); `--inference-ami` picks another, and a pair that cannot
run (a CUDA 13 torch on a 550 driver) is refused before anything is synthesized.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from deploy.errors import ConfigError

GPU_INSTANCE_FAMILIES = ("ml.g", "ml.p")


def version_label(library: str) -> str:
    """The GPU Dockerfile's label naming the version of the library its requirements install."""
    return f"voice-agent-aws.{library}-version"


def cuda_label(library: str) -> str:
    """The GPU Dockerfile's label naming that library's CUDA build."""
    return f"voice-agent-aws.{library}-cuda"


@dataclass(frozen=True)
class Ami:
    version: str
    driver: int
    """The NVIDIA driver's major version."""
    cuda: tuple[int, int]
    """The CUDA that driver ships; minor-version compatibility extends it to every minor of its major."""

    def runs(self, cuda: tuple[int, int]) -> bool:
        return cuda[0] <= self.cuda[0]

    def describe(self) -> str:
        return f"{self.version} (NVIDIA driver {self.driver}, runs CUDA {self.cuda[0]}.x and older)"


# Oldest first: the default is the last one that runs the image.
AMIS = (
    Ami("al2-ami-sagemaker-inference-gpu-2", 535, (12, 2)),
    Ami("al2-ami-sagemaker-inference-gpu-2-1", 535, (12, 2)),
    Ami("al2-ami-sagemaker-inference-gpu-3-1", 550, (12, 4)),
    Ami("al2023-ami-sagemaker-inference-gpu-4-1", 580, (13, 0)),
)
AMI_VERSIONS = tuple(ami.version for ami in AMIS)

# `torch==2.10.0 \` or `nvidia-cuda-runtime-cu12==12.8.90 ; platform_machine == ...`
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)", re.MULTILINE)
# The wheel whose version is each library's CUDA: torch's CUDA runtime (`nvidia-cuda-runtime-cu12` up to
# torch 2.10, `nvidia-cuda-runtime` for CUDA 13); for CTranslate2, which links its runtime in, the cuBLAS
# it loads (`nvidia-cublas-cu12`).
_CUDA_WHEELS = {
    "torch": ("CUDA runtime", re.compile(r"nvidia-cuda-runtime(-cu\d+)?")),
    "ctranslate2": ("cuBLAS", re.compile(r"nvidia-cublas(-cu\d+)?")),
}


@dataclass(frozen=True)
class CudaBuild:
    """The library a GPU image computes with, its version, and the CUDA of its libraries."""

    library: str
    version: str
    cuda: tuple[int, int]

    @property
    def cuda_text(self) -> str:
        return f"{self.cuda[0]}.{self.cuda[1]}"

    def describe(self) -> str:
        return f"{self.library} {self.version}, CUDA {self.cuda_text}"


def is_gpu_instance(instance_type: str) -> bool:
    return instance_type.startswith(GPU_INSTANCE_FAMILIES)


def ami_named(version: str) -> Ami:
    for ami in AMIS:
        if ami.version == version:
            return ami
    raise ConfigError(f"unknown inference AMI {version!r}; SageMaker offers {', '.join(AMI_VERSIONS)}")


def cuda_build(requirements: Path, library: str) -> CudaBuild:
    """The `library` (torch, ctranslate2) and its CUDA build that a locked requirements file (`uv export`
    of uv.lock) installs."""
    if not requirements.is_file():
        raise ConfigError(
            f"{requirements} not found: the GPU image installs it (export it from uv.lock with the command "
            "in its first lines)"
        )
    pins = {match["name"].lower(): match["version"] for match in _PIN.finditer(requirements.read_text())}
    if library not in pins:
        raise ConfigError(f"{requirements} installs no {library}, so the GPU image would have no CUDA build")
    what, wheel = _CUDA_WHEELS[library]
    cuda = next((version for name, version in pins.items() if wheel.fullmatch(name)), None)
    if cuda is None:
        raise ConfigError(
            f"{requirements}: {library} {pins[library]} comes with no {what} (a CPU-only build)"
        )
    major, minor = (int(part) for part in cuda.split(".")[:2])
    return CudaBuild(library, pins[library], (major, minor))


def choose_ami(build: CudaBuild | None, explicit: str | None, *, image: str) -> Ami:
    """`explicit` when it runs `build`, else the newest AMI that does; a pair that cannot run is refused
    (`image` names the image in the message).

    `build` is None for an image given by URI (its build is not known here): the explicit AMI, or the
    newest one.
    """
    if explicit is not None:
        ami = ami_named(explicit)
        if build is not None and not ami.runs(build.cuda):
            raise ConfigError(
                f"the {image}'s {build.describe()} cannot run on {ami.describe()}: choose "
                f"{choose_ami(build, None, image=image).version} or an image with a CUDA {ami.cuda[0]} "
                f"{build.library}"
            )
        return ami
    if build is None:
        return AMIS[-1]
    for ami in reversed(AMIS):
        if ami.runs(build.cuda):
            return ami
    raise ConfigError(
        f"no SageMaker inference AMI runs the {image}'s {build.describe()}; "
        f"the newest is {AMIS[-1].describe()}"
    )
