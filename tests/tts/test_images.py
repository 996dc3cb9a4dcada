"""The container images: what SageMaker requires of them, read from the Dockerfiles, and (on the Docker
engine the test run provides) built from them and started the way SageMaker starts them."""

import io
import re
import tarfile
from pathlib import Path

import docker.errors
import httpx
import pytest

from emulator.controller.runtimes import BIDI_LABEL
from emulator.images.build_config import PROXY_VARIABLES
from tests.support.docker import TTS_IMAGE, built, docker_client, inside, serving
from tests.support.dockerfiles import (
    KIT_DOCKERFILE,
    LABEL,
    STT_BUILDS,
    TTS_BUILDS,
    ImageBuild,
    builds_of,
    final_stage,
    instructions,
    runs,
)
from tests.support.paths import REPO

ALL_BUILDS = [
    *TTS_BUILDS,
    *STT_BUILDS,
    ImageBuild(REPO / "agent" / "Dockerfile"),
    ImageBuild(REPO / "emulator" / "echo.Dockerfile"),
]


@pytest.mark.parametrize("image", TTS_BUILDS, ids=str)
def test_dockerfile_meets_the_sagemaker_contract(image: ImageBuild):
    text = image.text()
    assert re.search(rf"^LABEL {re.escape(LABEL)}$", text, re.M)
    assert runs(image) == ["python", "-m", "tts"], "exec-form ENTRYPOINT"
    assert re.search(r'^CMD \["serve"\]$', text, re.M)
    assert "TTS_HOST=0.0.0.0" in text and "TTS_PORT=8080" in text
    assert "tini" not in text, "SageMaker does not support tini as entrypoint"


def test_the_cpu_images_are_the_kits_dockerfile_with_their_build_arguments():
    """One Dockerfile builds every model container's CPU image; each image names what differs."""
    assert [str(build) for build in builds_of(KIT_DOCKERFILE)] == [
        "container_kit/Dockerfile PACKAGE=stt",
        "container_kit/Dockerfile PACKAGE=tts",
    ]
    for build in builds_of(KIT_DOCKERFILE):
        text = build.text()
        package = build.build_args["PACKAGE"]
        assert f"pip install --require-hashes --no-deps -r {package}/requirements/cpu.txt" in text
        assert f"python -m {package} prepare {build.build_args['WEIGHTS_DIR']}" in text
        assert not re.search(r"\$\{?(PACKAGE|ENV_PREFIX|WEIGHTS_DIR)\b", text), "every argument given"


@pytest.mark.parametrize("image", ALL_BUILDS, ids=str)
def test_every_dockerfile_names_its_base_through_base_image(image: ImageBuild):
    steps = instructions(image)
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.12-slim"), "the base is a build argument"
    bases = [args.split()[0] for keyword, args in steps if keyword == "FROM"]
    assert bases and set(bases) == {"${BASE_IMAGE}"}


@pytest.mark.parametrize("image", ALL_BUILDS, ids=str)
def test_build_config_stays_out_of_the_final_stage(image: ImageBuild):
    """The machine's CA bundle and pip settings (build-config/) are read by the build stage only, and no
    build argument reaches the image's history: a RUN records the stage's arguments beside its command,
    so a final stage that takes arguments (the kit's: which package, its variables, its weights) runs
    nothing, and none of them is a proxy."""
    final = final_stage(image)
    assert not any("build-config" in args for _, args in final)
    arguments = {args.split("=")[0] for keyword, args in final if keyword == "ARG"}
    if arguments:
        assert not any(keyword == "RUN" for keyword, _ in final), "no build argument in the image's history"
        assert not arguments & {v for name in PROXY_VARIABLES for v in (name, name.lower())}


def test_gpu_image_runs_the_torch_engine_on_cuda_with_baked_weights():
    text = (REPO / "tts" / "Dockerfile.gpu").read_text()
    assert "TTS_ENGINE=torch" in text and "TTS_PROVIDER=cuda" in text
    assert "pip install --require-hashes --no-deps -r tts/requirements/gpu.txt" in text
    assert "check_torch.py" in text
    assert "python -m tts export-model /opt/kokoro/kokoro-torch --format torch" in text
    run = text.split("\nRUN ", 1)[1].split("\nEXPOSE", 1)[0]
    assert "onnxruntime" not in run, "the GPU image needs no onnxruntime-gpu"
    assert '"torch==2.10.0"' in (REPO / "pyproject.toml").read_text()


def test_gpu_dockerfile_keeps_what_the_gpu_image_needs():
    final = final_stage(REPO / "tts" / "Dockerfile.gpu")
    assert ("LABEL", LABEL) in final
    assert runs(REPO / "tts" / "Dockerfile.gpu") == ["python", "-m", "tts"], "exec-form ENTRYPOINT"
    assert ("COPY", "container_kit ./container_kit") in instructions(REPO / "tts" / "Dockerfile.gpu")


@pytest.mark.docker
@pytest.mark.parametrize("path", [REPO / "tts" / "Dockerfile.gpu", KIT_DOCKERFILE], ids=str)
def test_dockerfile_parses_in_the_engine(path: Path):
    """The engine's own parser reads the GPU Dockerfile and the kit's (nothing is built: the target does
    not exist)."""
    dockerfile = path.read_bytes()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    with pytest.raises(docker.errors.APIError, match="failed to reach build target no-such-stage"):
        docker_client().images.build(fileobj=context, custom_context=True, target="no-such-stage", rm=True)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_cpu_image_carries_the_label_and_serves():
    client = docker_client()
    image = client.images.get(built(TTS_IMAGE))
    assert image.labels[BIDI_LABEL] == "true"
    history = " ".join(str(step.get("CreatedBy", "")) for step in image.history())
    assert "build-config" not in history and "PIP_CONFIG_FILE" not in history, "build settings stay out"
    probe = "import os; print(os.path.exists('/tmp/build-config'), os.path.exists('/opt/kokoro'))"
    assert inside(TTS_IMAGE, probe) == [b"False", b"True"], "no CA bundle or pip.conf in the image; weights"
    with serving(TTS_IMAGE, startup_s=120) as url:
        response = httpx.post(f"{url}/invocations", json={"text": "Hello.", "format": "wav"}, timeout=60)
        assert response.status_code == 200 and response.content[:4] == b"RIFF"
        assert len(response.content) > 10_000
