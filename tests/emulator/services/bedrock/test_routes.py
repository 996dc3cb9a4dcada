"""The local model behind Bedrock (about 1 GB) loads at start only where a manifest runs an agent that
will ask it: the echo manifest, or any endpoint-only manifest, does not load it (#25 item 10). It loads
after the endpoints' replicas are up, which time their speech engine as they start (#31)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from emulator.llm.smollm.model import SmolLM2Model
from emulator.manifest import load_manifest
from emulator.server import emulator_in_thread
from tests.emulator.support import FIXTURES, boto_client, endpoint, fast_config, manifest, model, variant
from tests.support.paths import REPO

TOY_AGENT = {
    "toy-agent": {"command": ["{python}", str(FIXTURES / "agentcore_container.py"), "--port", "{port}"]}
}
RUNTIME = {
    "kind": "AgentRuntime",
    "spec": {
        "agentRuntimeName": "toy",
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "toy-agent:1"}},
        "roleArn": "arn:aws:iam::123456789012:role/agent",
    },
}


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When each SmolLM2 model was told to load (wall clock; nothing is loaded)."""
    calls: list[float] = []
    monkeypatch.setattr(SmolLM2Model, "load", lambda self: calls.append(time.time()))
    return calls


def _eventually(condition, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.integration
def test_the_echo_manifest_does_not_load_the_local_model(tmp_path: Path, loads: list[float]):
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    with emulator_in_thread(config, load_manifest(REPO / "compose" / "echo.yaml")):
        pass
    assert loads == []


@pytest.mark.integration
def test_a_manifest_with_an_agent_runtime_has_it_loaded_once_it_is_up(tmp_path: Path, loads: list[float]):
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    with emulator_in_thread(config, manifest([RUNTIME], TOY_AGENT)):
        assert len(loads) == 1
    assert len(loads) == 1


@pytest.mark.integration
def test_the_load_waits_for_the_endpoints_replicas_to_be_ready(tmp_path: Path, loads: list[float]):
    """A replica that takes 2 s to answer /ping: the model loads after its Ready, and the emulator is
    up only once the model has loaded."""
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    slow = model("slow", "voice-agent-aws/echo:latest", Environment={"ECHO_STARTUP_DELAY_S": "2"})
    resources = [slow, *endpoint("slow", [variant("AllTraffic", "slow")]), RUNTIME]
    with emulator_in_thread(config, manifest(resources, TOY_AGENT)) as emu:
        assert len(loads) == 1
        ready = [
            e.time
            for e in emu.store.events.recent(500)
            if e.reason == "Ready" and e.object.startswith("slow-")
        ]
    assert ready and loads[0] >= ready[0]


@pytest.mark.integration
def test_an_agent_runtime_created_after_start_loads_it(tmp_path: Path, loads: list[float]):
    """The deploy rehearsal creates its runtime after `emulator up` with a manifest without one: the
    creation starts the load (once, however many runtimes follow)."""
    config = fast_config(tmp_path, llm_backend="smollm2", llm_cache_dir=tmp_path / "llm")
    body = {
        "agentRuntimeName": "late",
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "toy-agent:1"}},
        "roleArn": "arn:aws:iam::123456789012:role/agent",
        "networkConfiguration": {"networkMode": "PUBLIC"},
    }
    with emulator_in_thread(config, load_manifest(REPO / "compose" / "echo.yaml")) as emu:
        control = boto_client(emu, "bedrock-agentcore-control")
        assert loads == []
        control.create_agent_runtime(**body)
        assert _eventually(lambda: len(loads) == 1)
        control.create_agent_runtime(**{**body, "agentRuntimeName": "later"})
        time.sleep(0.5)
    assert len(loads) == 1
