"""The settings the stack hands each replica go into the manifest, for that replica alone."""

from __future__ import annotations

from emulator.manifest import DEFAULT_MANIFEST, load_manifest
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
