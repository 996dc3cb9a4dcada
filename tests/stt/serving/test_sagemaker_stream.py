"""The official SageMaker HTTP/2 client streams a recording into the emulated STT endpoint
(compose/listen.yaml, the stt container as a process) and reads partial and final transcripts back,
as it does for TTS."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator.manifest import load_manifest
from emulator.server import Emulator, emulator_in_thread
from facts import STT_ENDPOINT
from tests.emulator.support import fast_config
from tests.support.paths import REPO
from tests.support.stt_container import silence, through_endpoint
from tools.asr import word_error_rate
from tools.speech_samples import recordings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    config = fast_config(tmp_path_factory.mktemp("emulator"), startup_timeout_s=240)
    with emulator_in_thread(config, load_manifest(REPO / "compose" / "listen.yaml")) as running:
        yield running


async def test_audio_streams_in_and_partials_and_the_final_come_back(emu: Emulator) -> None:
    clip = recordings()[0]
    got = await through_endpoint(emu, STT_ENDPOINT, silence(0.3) + clip.pcm() + silence(1.0))
    types = [m["type"] for m in got]
    assert types[0] == "speech_started" and "partial" in types and types[-2:] == ["final", "done"], types
    # the transport is under test here: Whisper base may hear "ill disposed" as two other words
    assert word_error_rate(clip.text, got[-2]["text"]) <= 0.3, got[-2]["text"]
