"""The gateway's tests run it in front of the emulator, as a user runs it in front of AWS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator.server import Emulator


@pytest.fixture(scope="session")
def kokoro_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The emulator with the default manifest's Kokoro endpoint (`kokoro-82m`, the real tts container, one
    session at a time: TTS_CAPACITY=1) and nothing else, checking SigV4 (the gateway's boto3 signs):
    what tests/gateway/ runs `python -m gateway` in front of, as a user runs it in front of AWS."""
    from emulator.manifest import DEFAULT_MANIFEST, Manifest, load_manifest
    from emulator.server import emulator_in_thread
    from tests.emulator.support import fast_config

    default = load_manifest(DEFAULT_MANIFEST)
    speech = [{"kind": r.kind, "spec": r.spec} for r in default.resources if r.kind != "AgentRuntime"]
    for resource in speech:
        if resource["kind"] == "Model":
            container = resource["spec"]["PrimaryContainer"]
            container["Environment"] = {**container.get("Environment", {}), "TTS_CAPACITY": "1"}
    speech_only = Manifest.from_obj({"resources": speech})
    config = fast_config(
        tmp_path_factory.mktemp("kokoro-emulator"),
        startup_timeout_s=240,
        sigv4_keys={"AKIAOPENAIGATEWAY": "a-secret-only-this-test-knows"},
    )
    with emulator_in_thread(config, speech_only) as running:
        yield running
