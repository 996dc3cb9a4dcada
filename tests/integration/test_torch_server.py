"""`TTS_ENGINE=torch python -m tts serve` passes the container's core tests (WebSocket with text and
binary frames, cancel, bad input, POST binary and SSE), the same test functions as the ONNX engine's,
run against a torch-engine container (torch on the CPU here). The rest of tests/integration/
test_tts_server.py exercises engine-independent layers (encoders, scheduling), so it runs once, on the
ONNX engine: the default run stays short."""

import httpx
import pytest

from tests.integration import test_tts_server as core

pytestmark = pytest.mark.integration


@pytest.fixture
def tts_server(torch_tts_server):
    return torch_tts_server


def test_ping_names_the_torch_engine_and_its_device(tts_server):
    body = httpx.get(f"{tts_server.http}/ping", timeout=10).json()
    assert {key: body[key] for key in ("status", "engine", "device")} == {
        "status": "ok",
        "engine": "torch",
        "device": "cpu",
    }
    assert set(body["load"]) == {"sessions", "capacity", "saturated", "waiting", "calibration"}


test_two_sentences_on_one_session = core.test_two_sentences_on_one_session
test_every_bad_input_is_answered_and_the_session_survives = (
    core.test_every_bad_input_is_answered_and_the_session_survives
)
test_cancel_drops_queued_and_in_flight_audio = core.test_cancel_drops_queued_and_in_flight_audio


async def test_invocations_binary(tts_server):
    await core.test_invocations_binary_in_every_format(tts_server, "pcm", "audio/pcm;rate=24000;channels=1")


test_invocations_sse = core.test_invocations_sse
