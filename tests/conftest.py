"""Fixtures shared by every test package: one real tts container per test session (ONNX engine), and
the torch layout exported once with a torch-engine container on it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from emulator.processes import child, free_port
from tests.support.paths import REPO


@dataclass(frozen=True)
class Server:
    host: str
    port: int

    @property
    def http(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://{self.host}:{self.port}/invocations-bidirectional-stream"


@pytest.fixture(scope="session")
def tts_server() -> Iterator[Server]:
    """`python -m tts serve` with the real Kokoro model, shared by the whole test session."""
    port = free_port()
    argv = [sys.executable, "-m", "tts", "serve", "--port", str(port), "--log-level", "warning"]
    with child(argv, ready_url=f"http://127.0.0.1:{port}/ping", timeout_s=120, cwd=REPO):
        yield Server("127.0.0.1", port)


@pytest.fixture(scope="session")
def torch_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m tts export-model DIR --format torch`, run once per test session."""
    from tts.config import TTSConfig
    from tts.export import export_torch

    return export_torch(tmp_path_factory.mktemp("kokoro-torch"), TTSConfig.from_env().cache_dir)


@pytest.fixture(scope="session")
def torch_tts_server(torch_model_dir: Path) -> Iterator[Server]:
    """`TTS_ENGINE=torch python -m tts serve` on the exported layout (torch on the CPU here)."""
    port = free_port()
    argv = [sys.executable, "-m", "tts", "serve", "--port", str(port), "--log-level", "warning"]
    env = {"TTS_ENGINE": "torch", "TTS_MODEL_DIR": str(torch_model_dir), "TTS_THREADS": "2"}
    with child(argv, env=env, ready_url=f"http://127.0.0.1:{port}/ping", timeout_s=300, cwd=REPO):
        yield Server("127.0.0.1", port)
