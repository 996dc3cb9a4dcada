"""The local model behind Bedrock (about 1 GB) loads at start only where a manifest runs an agent that
will ask it: the echo manifest, or any endpoint-only manifest, does not load it (#25 item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.llm.smollm.model import SmolLM2Model
from emulator.manifest import load_manifest
from emulator.server import emulator_in_thread
from tests.emulator.support import FIXTURES, fast_config, manifest
from tests.support.paths import REPO


@pytest.fixture
def warmed(monkeypatch: pytest.MonkeyPatch) -> list[SmolLM2Model]:
    """Each SmolLM2 model told to start loading (nothing is loaded)."""
    calls: list[SmolLM2Model] = []
    monkeypatch.setattr(SmolLM2Model, "warm", lambda self: calls.append(self))
    return calls


@pytest.mark.integration
def test_the_echo_manifest_does_not_load_the_local_model(tmp_path: Path, warmed: list[SmolLM2Model]):
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    with emulator_in_thread(config, load_manifest(REPO / "compose" / "echo.yaml")):
        pass
    assert warmed == []


@pytest.mark.integration
def test_a_manifest_with_an_agent_runtime_loads_it_at_start(tmp_path: Path, warmed: list[SmolLM2Model]):
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    runtime = {
        "kind": "AgentRuntime",
        "spec": {
            "agentRuntimeName": "toy",
            "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "toy-agent:1"}},
            "roleArn": "arn:aws:iam::123456789012:role/agent",
        },
    }
    toy = {
        "toy-agent": {"command": ["{python}", str(FIXTURES / "agentcore_container.py"), "--port", "{port}"]}
    }
    with emulator_in_thread(config, manifest([runtime], toy)):
        pass
    assert len(warmed) == 1


@pytest.mark.integration
def test_an_agent_runtime_created_after_start_loads_it(tmp_path: Path, warmed: list[SmolLM2Model]):
    """The deploy rehearsal creates its runtime after `emulator up` with a manifest without one: the
    creation starts the load (once, however many runtimes follow)."""
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    body = {
        "agentRuntimeName": "late",
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "toy-agent:1"}},
        "roleArn": "arn:aws:iam::123456789012:role/agent",
        "networkConfiguration": {"networkMode": "PUBLIC"},
    }
    with emulator_in_thread(config, load_manifest(REPO / "compose" / "echo.yaml")) as emulator:
        assert warmed == []
        emulator.agent_runtimes.CreateAgentRuntime(dict(body))
        assert len(warmed) == 1
        emulator.agent_runtimes.CreateAgentRuntime({**body, "agentRuntimeName": "later"})
    assert len(warmed) == 1
