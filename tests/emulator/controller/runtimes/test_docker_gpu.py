"""The docker runtime's GPU rule (`--gpus all` for a CUDA container on an engine with the NVIDIA runtime,
else the CPU override said in the replica's log), and `python -m emulator build`'s platform check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import docker.types
import pytest

from emulator.controller.runtimes.docker import DockerRuntime

REPO = Path(__file__).resolve().parents[2]


class Engine:
    """`docker info` as the runtime reads it."""

    def __init__(self, runtimes: dict[str, Any]) -> None:
        self.runtimes = runtimes

    def info(self) -> dict[str, Any]:
        return {"Runtimes": self.runtimes}


def runtime(engine: Engine, tmp_path: Path) -> DockerRuntime:
    runtime = DockerRuntime(home=tmp_path)
    runtime._client = engine  # type: ignore[assignment]
    return runtime


def test_a_cuda_container_runs_on_the_cpu_without_a_gpu_and_its_log_says_so(tmp_path: Path):
    environment = {"TTS_PROVIDER": "cuda", "TTS_ENGINE": "torch"}
    log = tmp_path / "logs" / "replica.log"
    settings = runtime(Engine({"runc": {}}), tmp_path).gpu_settings(environment, log)
    assert settings == {}
    assert environment == {"TTS_PROVIDER": "cpu", "TTS_ENGINE": "torch"}
    assert (
        log.read_text()
        == "emulator: no GPU in this Docker engine, so TTS_PROVIDER=cuda is overridden to cpu\n"
    )


def test_a_cuda_container_gets_every_gpu_when_the_engine_has_the_nvidia_runtime(tmp_path: Path):
    environment = {"TTS_PROVIDER": "cuda"}
    log = tmp_path / "replica.log"
    settings = runtime(Engine({"runc": {}, "nvidia": {}}), tmp_path).gpu_settings(environment, log)
    (request,) = settings["device_requests"]
    assert isinstance(request, docker.types.DeviceRequest)
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert environment == {"TTS_PROVIDER": "cuda"}
    assert not log.exists()


def test_a_container_that_asks_for_no_gpu_is_left_as_it_is(tmp_path: Path):
    environment = {"TTS_PROVIDER": "cpu"}
    assert runtime(Engine({"nvidia": {}}), tmp_path).gpu_settings(environment, tmp_path / "r.log") == {}
    assert environment == {"TTS_PROVIDER": "cpu"}


@pytest.mark.docker
def test_build_refuses_a_platform_the_builder_cannot_make():
    argv = [
        sys.executable,
        "-m",
        "emulator",
        "build",
        "--dockerfile",
        "agent/Dockerfile",
        "--tag",
        "never:built",
    ]
    result = subprocess.run(
        [*argv, "--platform", "linux/s390x"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "error: cannot build linux/s390x: " in result.stderr
    assert "linux/s390x is not a platform the builder knows (linux/arm64, linux/amd64)" in result.stderr


def test_the_stt_containers_cuda_is_read_and_overridden_the_same_way(tmp_path: Path):
    """The stt GPU image asks with STT_DEVICE=cuda: without a GPU it runs on the CPU (before, it kept
    asking for CUDA and never became ready in a local rehearsal with --listen)."""
    environment = {"STT_DEVICE": "cuda"}
    log = tmp_path / "replica.log"
    assert runtime(Engine({"runc": {}}), tmp_path).gpu_settings(environment, log) == {}
    assert environment == {"STT_DEVICE": "cpu"}
    assert "STT_DEVICE=cuda is overridden to cpu" in log.read_text()
    assert runtime(Engine({"nvidia": {}}), tmp_path).gpu_settings({"STT_DEVICE": "cuda"}, log)
