"""The GPU image (tts/Dockerfile.gpu), built here on the offline Python 3.12 base and served on the CPU.

Inside the image, what a GPU needs that can be checked without one: the torch build and its CUDA
version match the image's labels and the locked requirements, the CUDA libraries load (torch's CUDA
initialisation fails for want of a driver, not of a library), cuDNN's version. Behind the emulator's
docker runtime, with the official HTTP/2 client: the model comes from /opt/ml/model (the Model's
ModelDataSource), the provider is overridden to the CPU (the Model's environment; one line says so), and
the CPU image's checks pass: /ping, binary frames, a typed error, and speech an independent ASR
understands.

How the speech is judged: `tests/support/speech.py` (against the model's own whole-segment rendering,
decoded here from the same layout; Whisper over the session).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.config import REPO_ROOT
from deploy.gpu import cuda_build, cuda_label, version_label
from deploy.product import PRODUCT
from emulator.config import ImageSpec
from emulator.controller.runtimes.docker import OWNER_HOME
from emulator.manifest import load_manifest
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import bidi_client, fast_config, next_part, open_stream, part, replicas
from tests.support.docker import built_from, docker_client
from tests.support.speech import assert_speaks
from tts.config import TTSConfig
from tts.engines.torch.engine import TorchEngine

pytestmark = [
    pytest.mark.docker,
    pytest.mark.gpu_image,
    pytest.mark.integration,
    pytest.mark.asr,
    pytest.mark.timeout(3600),
]

GPU_IMAGE = "voice-agent-aws/kokoro-tts-gpu:latest"
SPEC = {
    "kokoro-tts-gpu": ImageSpec(
        ("{python}", "-m", "tts", "serve", "--host", "{host}", "--port", "{port}"),
        dockerfile=PRODUCT.speech.gpu_image.dockerfile,
    )
}
# The CPU image's sentences (tests/emulator/controller/runtimes/test_docker_tts.py): one request each,
# a UTF8 and a BINARY part.
TEXT_PART = "Thanks for waiting, I found your order."
BINARY_PART = "It shipped yesterday and should arrive on Thursday."
VOICE = "jm_kumo"
# A Japanese voice speaks Japanese unless a request says otherwise (tts/voices.py): unsaid, misaki's
# Japanese G2P spells the English sentence out letter by letter (229,800 samples against 72,600).
LANG = "en-us"
# What the container checks inside the image, printed as one JSON line.
PROBE = """
import json, os, torch
try:
    torch.cuda.init()
    init = "initialised"
except Exception as exc:
    init = f"{type(exc).__name__}: {exc}"
print(json.dumps({
    "torch": torch.__version__.split("+")[0],
    "cuda": torch.version.cuda,
    "cudnn": torch.backends.cudnn.version(),
    "available": torch.cuda.is_available(),
    "init": init,
    "model": sorted(os.listdir("/opt/ml/model")),
}))
"""


@pytest.fixture(scope="module")
def gpu_image() -> str:
    return built_from(GPU_IMAGE, SPEC)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hexgrad's layout, as the model cache uploads it to the S3 prefix that ModelDataSource names."""
    directory = tmp_path_factory.mktemp("model") / "kokoro-torch"
    subprocess.run(
        [sys.executable, "-m", "tts", "export-model", str(directory), "--format", "torch"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return directory


def test_inside_the_image_torch_has_its_cuda_build_and_finds_no_device_not_no_library(
    gpu_image: str, model_dir: Path
):
    locked = cuda_build(REPO_ROOT / PRODUCT.speech.gpu_image.requirements, "torch")
    client = docker_client()
    labels = client.images.get(gpu_image).labels
    assert (labels[version_label("torch")], labels[cuda_label("torch")]) == (locked.version, locked.cuda_text)
    output = client.containers.run(
        gpu_image,
        entrypoint=["python", "-c", PROBE],
        volumes={str(model_dir): {"bind": "/opt/ml/model", "mode": "ro"}},
        remove=True,
    )
    seen = json.loads(output.decode().strip().splitlines()[-1])
    print(f"inside {gpu_image}: {seen}", file=sys.stderr)
    assert (seen["torch"], seen["cuda"]) == (locked.version, locked.cuda_text)
    assert seen["available"] is False
    # `import torch` loaded libcudart, cuBLAS and cuDNN; what is missing is the driver (no GPU here).
    assert "NVIDIA driver" in seen["init"] and "cannot open shared object" not in seen["init"], seen["init"]
    assert seen["cudnn"] // 10000 == 9, f"cuDNN 9 (the cu12 wheel), got {seen['cudnn']}"
    assert {"config.json", "kokoro-v1_0.pth", "voices"} <= set(seen["model"])


def owned(home: Path) -> list:
    return docker_client().containers.list(all=True, filters={"label": f"{OWNER_HOME}={home.resolve()}"})


@pytest.fixture(scope="module")
def emu(gpu_image: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The endpoint as deploy/ defines it (torch engine, model from /opt/ml/model), on the CPU."""
    home = tmp_path_factory.mktemp("emulator")
    manifest = home / "gpu.yaml"
    environment = {"TTS_VOICE": VOICE, "TTS_ENGINE": "torch", "TTS_PROVIDER": "cpu"}
    manifest.write_text(
        json.dumps(
            {
                "resources": [
                    {
                        "kind": "Model",
                        "spec": {
                            "ModelName": "kokoro-gpu",
                            "PrimaryContainer": {
                                "Image": gpu_image,
                                "Environment": environment,
                                "ModelDataSource": {
                                    "S3DataSource": {
                                        "S3Uri": str(model_dir),
                                        "S3DataType": "S3Prefix",
                                        "CompressionType": "None",
                                    }
                                },
                            },
                        },
                    },
                    {
                        "kind": "EndpointConfig",
                        "spec": {
                            "EndpointConfigName": "kokoro-gpu",
                            "ProductionVariants": [
                                {
                                    "VariantName": "AllTraffic",
                                    "ModelName": "kokoro-gpu",
                                    "InstanceType": "ml.g5.xlarge",
                                    "InitialInstanceCount": 1,
                                }
                            ],
                        },
                    },
                    {
                        "kind": "Endpoint",
                        "spec": {"EndpointName": "kokoro-gpu", "EndpointConfigName": "kokoro-gpu"},
                    },
                ]
            }
        )
    )
    print(
        f"running {gpu_image} on the CPU: TTS_PROVIDER=cpu overrides the image's cuda (no GPU here)",
        file=sys.stderr,
    )
    config = fast_config(home, runtime="docker", startup_timeout_s=600)
    with emulator_in_thread(config, load_manifest(manifest)) as running:
        yield running
    assert owned(home) == [], "the emulator left a container behind"


async def session(emu: Emulator) -> tuple[dict[str, bytes], dict]:
    """A bad part (a typed error comes back), then two requests: their audio as binary frames."""
    client = await bidi_client(emu)
    stream = await open_stream(client, "kokoro-gpu")
    await stream.input_stream.send(part(b"{not json", "UTF8"))
    text = {"text": TEXT_PART, "request_id": "text", "lang": LANG}
    await stream.input_stream.send(part(json.dumps(text).encode(), "UTF8"))
    binary = {"text": BINARY_PART, "request_id": "binary", "lang": LANG}
    await stream.input_stream.send(part(json.dumps(binary).encode()))
    await stream.input_stream.send(part(b'{"type": "close"}'))
    _, events = await stream.await_output()
    audio: dict[str, bytearray] = {}
    current, error = None, {}
    try:
        while (got := await next_part(events, within_s=300)) is not None:
            if got.data_type == "BINARY":
                audio[current] += got.bytes_
                continue
            control = json.loads(got.bytes_)
            if control["type"] == "synthesis_start":
                current = control["request_id"]
                audio[current] = bytearray()
            elif control["type"] == "error":
                error = control
    finally:
        await stream.close()
    return {key: bytes(value) for key, value in audio.items()}, error


def test_the_gpu_image_speaks_on_the_cpu_through_the_official_client(emu: Emulator, model_dir: Path):
    [replica] = replicas(emu, "kokoro-gpu")
    assert replica["ident"].startswith("container ") and replica["ready"]
    container = next(
        c for c in docker_client().containers.list() if replica["ident"] == f"container {c.short_id}"
    )
    logs = container.logs().decode(errors="replace")
    assert "/opt/ml/model" in logs and " on cpu" in logs, logs[-2000:]
    audio, error = asyncio.run(session(emu))
    assert error.get("code"), f"a typed error for the bad part, got {error}"
    assert set(audio) == {"text", "binary"}
    engine = TorchEngine(TTSConfig(engine="torch", provider="cpu", threads=2), model_dir)
    assert_speaks(engine, VOICE, {"text": TEXT_PART, "binary": BINARY_PART}, audio)
