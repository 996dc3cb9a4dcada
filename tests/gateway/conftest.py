"""The gateway's tests run it in front of the emulator, as a user runs it in front of AWS."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from emulator.server import Emulator


@pytest.fixture(scope="session")
def kokoro_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The emulator with the default manifest's Kokoro endpoint (`kokoro-82m`, the real tts container, one
    session at a time: TTS_CAPACITY=1) and nothing else, checking SigV4 (the gateway's boto3 signs):
    what tests/gateway/ runs `python -m gateway` in front of, as a user runs it in front of AWS."""
    from emulator.manifest import DEFAULT_MANIFEST, load_manifest
    from emulator.server import emulator_in_thread
    from local_stack.stack import with_environment
    from tests.emulator.support import fast_config

    default = with_environment(load_manifest(DEFAULT_MANIFEST), {}, {"TTS_CAPACITY": "1"})
    speech = tuple(r for r in default.resources if r.kind != "AgentRuntime")
    speech_only = dataclasses.replace(default, resources=speech)  # and the manifest's images, as they are
    config = fast_config(
        tmp_path_factory.mktemp("kokoro-emulator"),
        startup_timeout_s=240,
        sigv4_keys={"AKIAOPENAIGATEWAY": "a-secret-only-this-test-knows"},
    )
    with emulator_in_thread(config, speech_only) as running:
        yield running
