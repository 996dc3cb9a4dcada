"""Fixtures shared by every test package: one real tts container per test session (ONNX engine), the
torch layout exported once with a torch-engine container on it; docker-marked tests need a Docker engine
(skipped without one, failed in CI: tests/support/docker.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docker import require_docker
from tests.support.tts_container import Server, tts_container

__all__ = ["Server"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None:
        require_docker()


@pytest.fixture(scope="session")
def tts_server() -> Iterator[Server]:
    """`python -m tts serve` with the real Kokoro model, shared by the whole test session. Its tests
    check how sessions take turns, so its capacity is set (TTS_CAPACITY), not measured: on a slow CPU
    the measured one is 1, and a second session would wait for a slot instead of taking turns.
    Admission has its own server (tests/integration/test_admission.py)."""
    with tts_container({"TTS_CAPACITY": "4"}) as (server, _):
        yield server


@pytest.fixture(scope="session")
def torch_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m tts export-model DIR --format torch`, run once per test session."""
    from tts.config import TTSConfig
    from tts.engines.torch.export import export_torch

    return export_torch(tmp_path_factory.mktemp("kokoro-torch"), TTSConfig.from_env().cache_dir)


@pytest.fixture(scope="session")
def torch_tts_server(torch_model_dir: Path) -> Iterator[Server]:
    """`TTS_ENGINE=torch python -m tts serve` on the exported layout (torch on the CPU here)."""
    env = {"TTS_ENGINE": "torch", "TTS_MODEL_DIR": str(torch_model_dir), "TTS_THREADS": "2"}
    with tts_container(env) as (server, _):
        yield server
