"""The settings the stack hands each replica go into the manifest, for that replica alone; the manifest
names the agent's runtime as the stack looks it up."""

from __future__ import annotations

from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from facts import AGENT_RUNTIME
from local_stack.stack import with_environment


def test_replica_settings_go_into_the_manifest_for_that_replica_alone() -> None:
    manifest = load_manifest(DEFAULT_MANIFEST)
    changed = with_environment(manifest, {"AGENT_X": "1"}, {"TTS_WINDOW_FIRST_FRAMES": "0"})
    specs = {r.kind: r.spec for r in changed.resources}
    assert specs["Model"]["PrimaryContainer"]["Environment"] == {
        "TTS_VOICE": "af_heart",
        "TTS_WINDOW_FIRST_FRAMES": "0",
    }
    runtime_env = specs["AgentRuntime"]["environmentVariables"]
    assert runtime_env["AGENT_X"] == "1" and "TTS_WINDOW_FIRST_FRAMES" not in runtime_env
    assert specs["Endpoint"] == {r.kind: r.spec for r in manifest.resources}["Endpoint"]
    assert with_environment(manifest, {}, {}) == manifest
    assert (
        "AGENT_X"
        not in next(r for r in manifest.resources if r.kind == "AgentRuntime").spec["environmentVariables"]
    ), "the loaded manifest is left as it was"


def test_the_default_manifest_runs_the_agent_as_the_runtime_the_stack_looks_up() -> None:
    """`local_stack()` finds the agent by facts.AGENT_RUNTIME: the manifest must name it so."""
    runtimes = [r for r in load_manifest(DEFAULT_MANIFEST).resources if r.kind == "AgentRuntime"]
    assert [r.spec["agentRuntimeName"] for r in runtimes] == [AGENT_RUNTIME]
