"""The speech-to-text GPU image (stt/Dockerfile.gpu), built here on the offline Python 3.12 base and served
on the CPU.

Inside the image, what a GPU needs that can be checked without one: CTranslate2 and its cuBLAS are the
versions the labels and the locked requirements name, the loader finds `libcublas.so.12` by the name
CTranslate2 asks for, and the image's own setting (`STT_DEVICE=cuda`) refuses to start Whisper without a
device, in the container's words. Behind the emulator's docker runtime, with the official HTTP/2 client:
the model's environment asks for `STT_DEVICE=cuda`, as the listening part's does; an engine without the
NVIDIA runtime overrides it to `cpu` (the GPU image's code on the CPU, the override in the replica's log),
and a recording streamed in comes back as partials and a final that match its words.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator

import pytest

from deploy.config import REPO_ROOT
from deploy.gpu import cuda_build, cuda_label, version_label
from deploy.product import PRODUCT
from emulator.config import ImageSpec
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import endpoint, fast_config, manifest, model, replicas, variant
from tests.support.docker import built_from, docker_client
from tests.support.stt_container import NO_GPU, silence, through_endpoint
from tools.asr import word_error_rate
from tools.speech_samples import recordings

pytestmark = [pytest.mark.docker, pytest.mark.gpu_image, pytest.mark.integration, pytest.mark.timeout(3600)]

LISTENING_IMAGE = PRODUCT.listening.gpu_image
STT_GPU_IMAGE = "voice-agent-aws/whisper-stt-gpu:latest"
SPEC = {
    "whisper-stt-gpu": ImageSpec(
        ("{python}", "-m", "stt", "serve", "--host", "{host}", "--port", "{port}"),
        dockerfile=LISTENING_IMAGE.dockerfile,
    )
}
ENDPOINT = "whisper-stt-gpu"
# What the container checks inside the image, printed as one JSON line.
PROBE = """
import ctypes, json, os, ctranslate2
from stt.config import STTConfig
from stt.engines.whisper import Transcriber
ctypes.CDLL("libcublas.so.12")
try:
    Transcriber(STTConfig.from_env())
    load = "loaded"
except RuntimeError as exc:
    load = str(exc)
print(json.dumps({
    "ctranslate2": ctranslate2.__version__,
    "cuda_devices": ctranslate2.get_cuda_device_count(),
    "device": os.environ["STT_DEVICE"],
    "load": load,
}))
"""


@pytest.fixture(scope="module")
def stt_gpu_image() -> str:
    return built_from(STT_GPU_IMAGE, SPEC)


def test_inside_the_image_ctranslate2_finds_cublas_and_cuda_refuses_to_start_without_a_gpu(
    stt_gpu_image: str,
):
    locked = cuda_build(REPO_ROOT / LISTENING_IMAGE.requirements, LISTENING_IMAGE.library)
    client = docker_client()
    labels = client.images.get(stt_gpu_image).labels
    library = LISTENING_IMAGE.library
    assert (labels[version_label(library)], labels[cuda_label(library)]) == (locked.version, locked.cuda_text)
    output = client.containers.run(stt_gpu_image, entrypoint=["python", "-c", PROBE], remove=True)
    seen = json.loads(output.decode().strip().splitlines()[-1])
    print(f"inside {stt_gpu_image}: {seen}", file=sys.stderr)
    assert (seen["ctranslate2"], seen["cuda_devices"], seen["device"]) == (locked.version, 0, "cuda")
    assert NO_GPU in seen["load"], seen["load"]


@pytest.fixture(scope="module")
def emu(stt_gpu_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The endpoint as the listening part makes it (STT_DEVICE=cuda), on this engine's CPU."""
    resources = [
        model(ENDPOINT, stt_gpu_image, Environment={"STT_DEVICE": "cuda"}),
        *endpoint(ENDPOINT, [variant("AllTraffic", ENDPOINT)]),
    ]
    config = fast_config(tmp_path_factory.mktemp("emulator"), runtime="docker", startup_timeout_s=600)
    with emulator_in_thread(config, manifest(resources)) as running:
        yield running


def test_the_stt_gpu_image_transcribes_on_the_cpu_through_the_official_client(emu: Emulator):
    [replica] = replicas(emu, ENDPOINT)
    assert replica["ident"].startswith("container ") and replica["ready"]
    container = next(
        c for c in docker_client().containers.list() if replica["ident"] == f"container {c.short_id}"
    )
    logs = container.logs().decode(errors="replace")
    assert "ready: whisper whisper-base on cpu" in logs, logs[-2000:]
    clip = recordings()[0]
    got = asyncio.run(through_endpoint(emu, ENDPOINT, silence(0.3) + clip.pcm() + silence(1.0)))
    types = [message["type"] for message in got]
    assert types[0] == "speech_started" and "partial" in types and types[-2:] == ["final", "done"], types
    assert word_error_rate(clip.text, got[-2]["text"]) <= 0.3, got[-2]["text"]
