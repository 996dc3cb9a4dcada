"""The container images: what SageMaker requires of them, read from the Dockerfiles, and (where a
Docker engine exists) built and started the way SageMaker starts them."""

import json
import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from emulator.processes import free_port
from tests.support.docker import docker_unavailable
from tests.support.paths import REPO

DOCKERFILES = [REPO / "tts" / "Dockerfile", REPO / "tts" / "Dockerfile.gpu"]
LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_meets_the_sagemaker_contract(dockerfile: Path):
    text = dockerfile.read_text()
    assert re.search(rf"^LABEL {re.escape(LABEL)}$", text, re.M)
    entrypoint = re.search(r"^ENTRYPOINT (.+)$", text, re.M)
    assert entrypoint and json.loads(entrypoint.group(1)) == ["python", "-m", "tts"], "exec-form ENTRYPOINT"
    assert re.search(r'^CMD \["serve"\]$', text, re.M)
    assert "TTS_HOST=0.0.0.0" in text and "TTS_PORT=8080" in text
    assert "tini" not in text, "SageMaker does not support tini as entrypoint"


def test_gpu_image_runs_the_torch_engine_on_cuda_with_baked_weights():
    text = (REPO / "tts" / "Dockerfile.gpu").read_text()
    assert "TTS_ENGINE=torch" in text and "TTS_PROVIDER=cuda" in text
    assert ".[tts,torch]" in text and "check_torch.py" in text
    assert "python -m tts export-model /opt/kokoro/kokoro-torch --format torch" in text
    run = text.split("\nRUN ", 1)[1].split("\nEXPOSE", 1)[0]
    assert "onnxruntime" not in run, "the GPU image needs no onnxruntime-gpu"
    assert '"torch>=2.10.0"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.docker
def test_cpu_image_builds_and_serves():
    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
    tag = "voice-agent-aws/kokoro-tts:test"
    subprocess.run(["docker", "build", "-f", "tts/Dockerfile", "-t", tag, "."], cwd=REPO, check=True)
    labels = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{json .Config.Labels}}", tag],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(labels)["com.amazonaws.sagemaker.capabilities.bidirectional-streaming"] == "true"
    port = free_port()
    container = subprocess.run(
        ["docker", "run", "-d", "-p", f"127.0.0.1:{port}:8080", tag, "serve"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ping").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        response = httpx.post(f"http://127.0.0.1:{port}/invocations", json={"text": "Hello."}, timeout=60)
        assert response.status_code == 200 and len(response.content) > 10_000
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
