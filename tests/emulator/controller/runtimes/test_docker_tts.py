"""The kokoro-tts IMAGE (container_kit/Dockerfile, PACKAGE=tts) behind the emulator's docker runtime, with
the official HTTP/2 client: what it says, from a text part and a binary part, is the model's speech of
those texts and an independent ASR understands it (`tests/support/speech.py`); a container killed
mid-session fails that session at once and is replaced; nothing is left after."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_sdk_sagemaker_runtime_http2.models import ModelStreamError

from emulator.controller.runtimes.docker import OWNER_HOME
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.server import Emulator, emulator_in_thread
from facts import DEFAULT_VOICE
from tests.emulator.support import bidi_client, fast_config, next_part, open_stream, part, replicas
from tests.support.docker import TTS_IMAGE, built, docker_client
from tests.support.speech import assert_speaks
from tts.config import TTSConfig
from tts.engines.onnx.engine import OnnxEngine

pytestmark = [pytest.mark.docker, pytest.mark.integration, pytest.mark.asr, pytest.mark.timeout(900)]

TEXT_PART = "Thanks for waiting, I found your order."
BINARY_PART = "It shipped yesterday and should arrive on Thursday."


def owned(home: Path) -> list:
    return docker_client().containers.list(all=True, filters={"label": f"{OWNER_HOME}={home.resolve()}"})


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    # The default manifest's endpoint alone: its agent runtime is a linux/arm64 image, built and run
    # under QEMU, which the arm64_image phase covers (tests/emulator/images/test_arm64_agent.py); built
    # here, a change to the agent's code rebuilt it under emulation in the default run (part of this
    # fixture's 178 s on a fresh clone).
    default = load_manifest(DEFAULT_MANIFEST)
    manifest = dataclasses.replace(
        default, resources=tuple(r for r in default.resources if r.service == "sagemaker")
    )
    assert manifest.container_images == [TTS_IMAGE]
    built(TTS_IMAGE)
    home = tmp_path_factory.mktemp("emulator")
    config = fast_config(home, runtime="docker", startup_timeout_s=240)
    with emulator_in_thread(config, manifest) as running:
        yield running
    assert owned(home) == [], "the emulator left a container behind"


async def speak(emu: Emulator) -> dict[str, bytes]:
    """One session: a UTF8 part and a BINARY part (the SDK default), each a request; audio by request."""
    client = await bidi_client(emu)
    stream = await open_stream(client, "kokoro-82m")
    await stream.input_stream.send(
        part(json.dumps({"text": TEXT_PART, "request_id": "text"}).encode(), "UTF8")
    )
    await stream.input_stream.send(part(json.dumps({"text": BINARY_PART, "request_id": "binary"}).encode()))
    await stream.input_stream.send(part(b'{"type": "close"}'))
    _, events = await stream.await_output()
    audio: dict[str, bytearray] = {}
    current = None
    try:
        while (got := await next_part(events, within_s=120)) is not None:
            if got.data_type == "BINARY":
                audio[current] += got.bytes_
            else:
                control = json.loads(got.bytes_)
                if control["type"] == "synthesis_start":
                    current = control["request_id"]
                    audio[current] = bytearray()
    finally:
        await stream.close()
    return {key: bytes(value) for key, value in audio.items()}


def test_the_image_speaks_through_the_official_client(emu: Emulator) -> None:
    [replica] = replicas(emu, "kokoro-82m")
    assert replica["ident"].startswith("container ")
    audio = asyncio.run(speak(emu))
    assert set(audio) == {"text", "binary"}
    engine = OnnxEngine(TTSConfig.from_env(threads=2))
    assert_speaks(engine, DEFAULT_VOICE, {"text": TEXT_PART, "binary": BINARY_PART}, audio)


def test_a_killed_container_fails_its_session_at_once_and_is_replaced(emu: Emulator) -> None:
    [before] = replicas(emu, "kokoro-82m")
    container = next(
        c for c in docker_client().containers.list() if before["ident"] == f"container {c.short_id}"
    )

    async def killed_mid_session() -> float:
        client = await bidi_client(emu)
        stream = await open_stream(client, "kokoro-82m")
        for index in range(6):  # one sentence per request: audio starts after the first
            request = {"text": BINARY_PART, "request_id": f"r{index}"}
            await stream.input_stream.send(part(json.dumps(request).encode()))
        _, events = await stream.await_output()
        while (await next_part(events, within_s=120)).data_type != "BINARY":
            pass  # synthesis is under way once the first audio arrives
        await asyncio.to_thread(container.kill)
        killed = time.monotonic()
        with pytest.raises(ModelStreamError):
            while await next_part(events, within_s=30) is not None:
                pass
        took = time.monotonic() - killed
        await stream.close()
        return took

    took = asyncio.run(killed_mid_session())
    assert took < 1.0, f"the client learned of the dead container after {took:.2f} s"
    deadline = time.monotonic() + 180
    while True:
        [after] = replicas(emu, "kokoro-82m")
        if after["restarts"] == 1 and after["ready"]:
            break
        assert time.monotonic() < deadline, f"the replica was not replaced: {after}"
        time.sleep(0.5)
    assert after["ident"] != before["ident"]
    audio = asyncio.run(speak(emu))
    assert len(audio["text"]) > 24_000 and len(audio["binary"]) > 24_000
