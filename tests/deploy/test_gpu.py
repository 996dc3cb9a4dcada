"""The GPU image and the endpoint's AMI agree by construction (deploy/gpu.py): the torch and CUDA build
read from the locked requirements that tts/Dockerfile.gpu installs, the AMI chosen from the table, an
impossible pair refused by `python -m deploy synth` in one line, and the exported requirements kept equal
to `uv export` of uv.lock."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.__main__ import main as deploy_main
from deploy.config import REPO_ROOT, SPEECH_MODELS, DeployConfig
from deploy.errors import ConfigError
from deploy.gpu import AMIS, TORCH_CUDA_LABEL, TORCH_VERSION_LABEL, TorchBuild, choose_ami, torch_build

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
AGENT_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/voice-agent:arm64"
GPU_IMAGE = SPEECH_MODELS["kokoro-82m"]
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
    model_dir = tmp_path / "model"  # hexgrad's layout, tiny stand-ins: synthesis only stages the files
    (model_dir / "voices").mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text("{}")
    (model_dir / "kokoro-v1_0.pth").write_bytes(b"pth")
    (model_dir / "voices" / "jm_kumo.pt").write_bytes(b"pt")
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


def test_the_image_installs_a_cuda_12_torch_that_its_labels_name():
    """The lock's torch for the GPU image runs on every AMI, and the Dockerfile's labels name it."""
    built = torch_build(REPO_ROOT / GPU_IMAGE.requirements)
    assert built == TorchBuild("2.10.0", (12, 8))
    dockerfile = (REPO_ROOT / GPU_IMAGE.dockerfile).read_text()
    labels = dict(re.findall(r"\b(voice-agent-aws\.torch-[a-z]+)=(\S+)", dockerfile))
    assert labels == {TORCH_VERSION_LABEL: built.version, TORCH_CUDA_LABEL: built.cuda_text}
    assert f"pip install --require-hashes --no-deps -r {GPU_IMAGE.requirements}" in dockerfile
    assert all(ami.runs(built.cuda) for ami in AMIS)


def test_the_newest_ami_that_runs_the_image_is_the_default():
    assert choose_ami(TorchBuild("2.10.0", (12, 8)), None).version == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert choose_ami(TorchBuild("2.15.0", (13, 2)), None).driver == 580
    explicit = choose_ami(TorchBuild("2.10.0", (12, 8)), "al2-ami-sagemaker-inference-gpu-2")
    assert (explicit.driver, explicit.cuda) == (535, (12, 2))
    with pytest.raises(ConfigError, match="no SageMaker inference AMI runs"):
        choose_ami(TorchBuild("3.0.0", (14, 0)), None)


def test_requirements_without_a_cuda_torch_are_refused(tmp_path: Path):
    cpu_only = tmp_path / "cpu.txt"
    cpu_only.write_text("torch==2.10.0 \\\n    --hash=sha256:00\nnumpy==2.3.0\n")
    with pytest.raises(ConfigError, match="no CUDA runtime"):
        torch_build(cpu_only)
    with pytest.raises(ConfigError, match="installs no torch"):
        torch_build(REPO_ROOT / "tts" / "requirements" / "cpu.txt")


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
    assert err.startswith("error: the tts image's torch 2.15.0, CUDA 13.2 cannot run on ")
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


@pytest.mark.parametrize("image", ["cpu", "gpu"])
def test_the_images_requirements_are_uv_lock_exported(image: str):
    """What the Dockerfiles install is uv.lock as it is: the export's own first lines say how to remake it."""
    uv = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    if uv is None:
        pytest.skip("uv is not installed")
    committed = (REPO_ROOT / "tts" / "requirements" / f"{image}.txt").read_text()
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
        f"tts/requirements/{image}.txt is stale: run `{' '.join(command)}`"
    )
