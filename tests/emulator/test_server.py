"""The real tts container (`python -m tts serve`, Kokoro-82M) behind the emulator's default manifest.

The same client code that breaks a text-only container (BINARY parts, the SDK default) gets audio
from ours: the acceptance check that the emulator reproduces SageMaker's frame typing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from aws_sdk_sagemaker_runtime_http2.models import ModelStreamError

from emulator.manifest import DEFAULT_MANIFEST, Manifest, load_manifest
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import (
    TEXT_ONLY_COMMAND,
    bidi_client,
    endpoint,
    fast_config,
    model,
    next_part,
    open_stream,
    part,
    variant,
)

pytestmark = pytest.mark.integration

SENTENCES = ["Hello from the emulator.", "This is the second sentence.", "And a third one to finish."]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    default = load_manifest(DEFAULT_MANIFEST)
    text_only = [
        model("text-only", "text-only:latest"),
        *endpoint("text-only", [variant("AllTraffic", "text-only")]),
    ]
    combined = Manifest.from_obj(
        {
            "resources": [{"kind": r.kind, "spec": r.spec} for r in default.resources] + text_only,
            "images": {**default.images, "text-only": {"command": TEXT_ONLY_COMMAND}},
        }
    )
    config = fast_config(tmp_path_factory.mktemp("emulator"), startup_timeout_s=240)
    with emulator_in_thread(config, combined) as running:
        yield running


async def speak(emu: Emulator, endpoint_name: str, sentences: list[str]) -> tuple[list[dict], int]:
    """Send each sentence as one BINARY part (no DataType) on one session; collect the answers."""
    client = await bidi_client(emu)
    stream = await open_stream(client, endpoint_name)
    for index, text in enumerate(sentences):
        await stream.input_stream.send(part(json.dumps({"text": text, "request_id": f"r{index}"}).encode()))
    await stream.input_stream.send(part(b'{"type": "close"}'))
    output, events = await stream.await_output()
    assert output.invoked_production_variant == "AllTraffic"
    controls: list[dict] = []
    audio = 0
    try:
        while (got := await next_part(events, within_s=120)) is not None:
            if got.data_type == "BINARY":
                audio += len(got.bytes_)
            else:
                controls.append(json.loads(got.bytes_))
    finally:
        await stream.close()
    return controls, audio


async def test_several_sentences_on_one_session_come_back_as_audio(emu: Emulator) -> None:
    controls, audio = await speak(emu, "kokoro-82m", SENTENCES)
    completes = [c for c in controls if c["type"] == "synthesis_complete"]
    assert [c["request_id"] for c in completes] == ["r0", "r1", "r2"]
    assert [c["type"] for c in controls if c["type"] == "synthesis_start"] == ["synthesis_start"] * 3
    assert audio == sum(c["audio_bytes"] for c in completes) > 24000


async def test_binary_parts_break_a_text_only_container_but_not_ours(emu: Emulator) -> None:
    with pytest.raises(ModelStreamError):
        await speak(emu, "text-only", SENTENCES[:1])
    controls, audio = await speak(emu, "kokoro-82m", SENTENCES[:1])
    assert audio > 0 and controls[-1]["type"] == "synthesis_complete"
