"""The GPU images and the endpoints' AMI agree by construction (deploy/gpu.py): the torch and CUDA build
read from the locked requirements that tts/Dockerfile.gpu installs (CTranslate2 and its cuBLAS for
stt/Dockerfile.gpu), the AMI chosen from the table, an impossible pair refused by `python -m deploy synth`
in one line, and the exported requirements kept equal to `uv export` of uv.lock."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.__main__ import main as deploy_main
from deploy.config import REPO_ROOT, DeployConfig
from deploy.errors import ConfigError
from deploy.gpu import AMIS, CudaBuild, choose_ami, cuda_build, cuda_label, version_label
from deploy.product import PRODUCT, GpuImage
from tests.deploy.conftest import kokoro_stand_in

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
AGENT_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/voice-agent:arm64"
GPU_IMAGE = PRODUCT.speech.gpu_image
CUDA13_REQUIREMENTS = """\
torch==2.15.0 \\
    --hash=sha256:6d8c86f4e33a9f12a58149bd9b0d64351632b8eb44479be8ff85e5389932dd79
nvidia-cuda-runtime==13.2.86 ; sys_platform == 'linux' \\
    --hash=sha256:00
"""


def source_tree(root: Path, dockerfile: str, requirements: str) -> Path:
    """A repository root holding just the GPU image's Dockerfile and its requirements."""
    (root / "tts" / "requirements").mkdir(parents=True)
    (root / GPU_IMAGE.dockerfile).write_text(dockerfile)
    (root / GPU_IMAGE.requirements).write_text(requirements)
    return root


def synth(source: Path, tmp_path: Path, *extra: str) -> int:
    model_dir = kokoro_stand_in(tmp_path / "model")
    return deploy_main(
        [
            "synth",
            "--source-dir", str(source),
            "--outdir", str(tmp_path / "cdk.out"),
            "--model-dir", str(model_dir),
            "--agent-image-uri", AGENT_IMAGE,
            "--bedrock-model-id", MODEL_ID,
            *extra,
        ]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (GPU_IMAGE, CudaBuild("torch", "2.10.0", (12, 8))),
        (PRODUCT.listening.gpu_image, CudaBuild("ctranslate2", "4.8.5", (12, 8))),
    ],
    ids=["tts", "stt"],
)
def test_each_image_installs_a_cuda_12_build_that_its_labels_name(image: GpuImage, expected: CudaBuild):
    """The lock's torch (tts) and CTranslate2 with its cuBLAS (stt) run on every AMI, and each GPU
    Dockerfile's labels name them."""
    built = cuda_build(REPO_ROOT / image.requirements, image.library)
    assert built == expected
    dockerfile = (REPO_ROOT / image.dockerfile).read_text()
    labels = dict(re.findall(r"\b(voice-agent-aws\.[a-z0-9]+-[a-z]+)=(\S+)", dockerfile))
    assert labels == {version_label(image.library): built.version, cuda_label(image.library): built.cuda_text}
    assert f"pip install --require-hashes --no-deps -r {image.requirements}" in dockerfile
    assert all(ami.runs(built.cuda) for ami in AMIS)


def test_the_newest_ami_that_runs_the_image_is_the_default():
    def ami(build: CudaBuild, explicit: str | None = None):
        return choose_ami(build, explicit, image="tts image")

    assert ami(CudaBuild("torch", "2.10.0", (12, 8))).version == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert ami(CudaBuild("torch", "2.15.0", (13, 2))).driver == 580
    explicit = ami(CudaBuild("torch", "2.10.0", (12, 8)), "al2-ami-sagemaker-inference-gpu-2")
    assert (explicit.driver, explicit.cuda) == (535, (12, 2))
    with pytest.raises(ConfigError, match=r"no SageMaker inference AMI runs the tts image.s torch 3\.0\.0"):
        ami(CudaBuild("torch", "3.0.0", (14, 0)))


def test_requirements_without_a_cuda_build_are_refused(tmp_path: Path):
    cpu_only = tmp_path / "cpu.txt"
    cpu_only.write_text("torch==2.10.0 \\\n    --hash=sha256:00\nnumpy==2.3.0\nctranslate2==4.8.5\n")
    with pytest.raises(ConfigError, match=r"torch 2\.10\.0 comes with no CUDA runtime"):
        cuda_build(cpu_only, "torch")
    with pytest.raises(ConfigError, match=r"ctranslate2 4\.8\.5 comes with no cuBLAS"):
        cuda_build(cpu_only, "ctranslate2")
    with pytest.raises(ConfigError, match="installs no torch"):
        cuda_build(REPO_ROOT / "tts" / "requirements" / "cpu.txt", "torch")
    with pytest.raises(ConfigError, match="comes with no cuBLAS"):  # the CPU image leaves cuBLAS out
        cuda_build(REPO_ROOT / "stt" / "requirements" / "cpu.txt", "ctranslate2")


def test_an_unknown_ami_or_one_on_a_cpu_instance_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown inference AMI"):
        DeployConfig(inference_ami="al2-ami-sagemaker-inference-gpu-9")
    with pytest.raises(ConfigError, match="has no GPU"):
        DeployConfig(instance_type="ml.c5.2xlarge", inference_ami=AMIS[-1].version)


def test_synth_refuses_a_cuda_13_image_on_the_550_driver_ami(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    dockerfile = (REPO_ROOT / GPU_IMAGE.dockerfile).read_text()
    source = source_tree(tmp_path / "repo", dockerfile, CUDA13_REQUIREMENTS)
    code = synth(source, tmp_path, "--inference-ami", "al2-ami-sagemaker-inference-gpu-3-1")
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("error: the kokoro-82m image's torch 2.15.0, CUDA 13.2 cannot run on ")
    assert "al2-ami-sagemaker-inference-gpu-3-1 (NVIDIA driver 550" in err
    assert "choose al2023-ami-sagemaker-inference-gpu-4-1" in err
    assert not (tmp_path / "cdk.out").exists(), "refused before anything was synthesized"


@pytest.mark.cdk
def test_synth_refuses_a_gpu_dockerfile_without_the_streaming_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is the `cdk` extra: pip install -e '.[cdk]'")
    dockerfile = (REPO_ROOT / GPU_IMAGE.dockerfile).read_text()
    unlabelled = dockerfile.replace("com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true", "")
    assert unlabelled != dockerfile
    requirements = (REPO_ROOT / GPU_IMAGE.requirements).read_text()
    source = source_tree(tmp_path / "repo", unlabelled, requirements)
    code = synth(source, tmp_path)
    err = capsys.readouterr().err
    assert code == 2
    assert "lacks `LABEL com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true`" in err


@pytest.mark.parametrize(
    "requirements",
    [
        "tts/requirements/cpu.txt",
        "tts/requirements/gpu.txt",
        "stt/requirements/cpu.txt",
        "stt/requirements/gpu.txt",
    ],
)
def test_the_images_requirements_are_uv_lock_exported(requirements: str):
    """What the Dockerfiles install is uv.lock as it is: the export's own first lines say how to remake it."""
    uv = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if uv is None:
        pytest.skip("uv is not installed")
    committed = (REPO_ROOT / requirements).read_text()
    command = committed.splitlines()[1].removeprefix("#    ").split()
    assert command[:2] == ["uv", "export"] and "--frozen" in command
    stdout_command = command[: command.index("-o")] if "-o" in command else command
    result = subprocess.run(
        [uv, *stdout_command[1:], "--quiet"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    body = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    assert body == [line for line in committed.splitlines() if not line.startswith("#")], (
        f"{requirements} is stale: run `{' '.join(command)}`"
    )
