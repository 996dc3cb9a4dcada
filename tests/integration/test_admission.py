"""Admission on the real container (tts/scheduling/admission.py): a replica that keeps one session
gap-free (TTS_CAPACITY=1, as the calibration measures on a slow CPU) tells a second session its place
in line (`queued`) and gives it audio once the first session's slot frees; past the line, a typed
`busy` answer on both routes; the sessions already admitted or waiting are served as before."""

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from tests.support.tts_container import Server, tts_container
from tools.tts_client import (
    ContainerError,
    Transcript,
    close_and_drain,
    connect,
    is_control,
    read_until,
    speak,
)
from tts.config import TTSConfig
from tts.scheduling.admission import max_waiting

pytestmark = pytest.mark.integration

ANSWER = ["Thanks for waiting, I found your order.", "It shipped yesterday and should arrive on Friday."]


@pytest.fixture(scope="module")
def one_slot():
    with tts_container({"TTS_CAPACITY": "1"}) as (server, _):
        yield server


def message(text: str, request_id: str) -> dict[str, str]:
    return {"text": text, "request_id": request_id}


async def test_a_second_session_is_told_its_place_and_served_when_the_first_closes(one_slot: Server):
    async with connect(one_slot.ws) as first, connect(one_slot.ws) as second:
        held = Transcript()
        for n, text in enumerate(ANSWER):
            await first.send(message(text, f"a{n}"))
        await read_until(first, held, lambda frame: isinstance(frame, bytes), 60)  # first is playing
        await second.send(message("Hello there.", "b"))
        waiting = await read_until(second, Transcript(), is_control("queued"), 30)
        assert waiting.controls("queued") == [{"type": "queued", "request_id": "b", "position": 1}]
        assert not waiting.pcm(), "a waiting session gets no audio before its slot"
        await read_until(first, held, is_control("synthesis_complete", "a1"), 60)
        first_done = held.received[-1].at_s
        await close_and_drain(first, held, 30)  # the first sends no more: its slot frees
        served = await read_until(second, waiting, is_control("synthesis_complete", "b"), 60)
        assert held.closed and not held.controls("queued")
        assert served.first(lambda frame: isinstance(frame, bytes)).at_s > first_done
        assert len(served.pcm()) > 24_000  # half a second of speech


async def test_a_session_that_closes_and_goes_away_mid_answer_leaves_its_slot_free(one_slot: Server):
    """A client that says `close` and drops the connection while much of its answer is still to
    compute (the agent, when a question is asked over a speaking answer) leaves nothing behind: the
    next session gets the slot. Before, that answer's audio, which nobody would read, held its work at
    the scheduler's bound of 10 s ahead, and the slot with it: the next session waited in line until
    the replica stopped (the browser test's third question on an AVX2-only CPU, capacity 1)."""
    async with connect(one_slot.ws) as first:
        for n in range(4):
            for m, text in enumerate(ANSWER):
                await first.send(message(text, f"a{n}{m}"))  # about 28 s of speech
        await read_until(first, Transcript(), lambda frame: isinstance(frame, bytes), 60)
        await first.close()
    async with connect(one_slot.ws) as second:
        await second.send(message("Hello there.", "b"))
        served = await read_until(second, Transcript(), is_control("synthesis_complete", "b"), 60)
        assert len(served.pcm()) > 24_000  # half a second of speech


async def test_past_the_line_a_session_is_refused_busy_and_the_others_are_served(one_slot: Server):
    line = max_waiting(1)
    async with connect(one_slot.ws) as first:
        held = Transcript()
        for n, text in enumerate(ANSWER):
            await first.send(message(text, f"a{n}"))
        await read_until(first, held, lambda frame: isinstance(frame, bytes), 60)

        waiting = [connect(one_slot.ws) for _ in range(line)]
        channels = [await session.__aenter__() for session in waiting]
        try:
            for n, channel in enumerate(channels):
                await channel.send(message("Hello there.", f"w{n}"))
                told = await read_until(channel, Transcript(), is_control("queued"), 30)
                assert told.controls("queued")[-1]["position"] == n + 1
            async with connect(one_slot.ws) as late:
                with pytest.raises(ContainerError, match=r"^busy: "):
                    await speak(late, [message("One more.", "late")], 30)
            async with httpx.AsyncClient(trust_env=False) as client:
                refused = await client.post(
                    f"{one_slot.http}/invocations", json={"text": "One more.", "format": "wav"}, timeout=30
                )
                assert refused.status_code == 503, refused.text
                assert refused.json()["code"] == "busy"
                ping = (await client.get(f"{one_slot.http}/ping", timeout=10)).json()
                assert ping["load"]["waiting"] == line
            await close_and_drain(first, held, 60)
            assert held.closed and set(held.audio()) == {"a0", "a1"}

            async def finish(channel, n: int) -> bytes:
                await read_until(channel, transcript := Transcript(), is_control("synthesis_complete"), 120)
                await close_and_drain(channel, transcript, 30)
                return transcript.pcm()

            heard = await asyncio.gather(*(finish(channel, n) for n, channel in enumerate(channels)))
            assert all(len(pcm) > 24_000 for pcm in heard)
        finally:
            for session in waiting:
                await session.__aexit__(None, None, None)


def test_the_calibration_is_kept_per_cpu_signature_and_a_cache_it_cannot_write_does_not_stop_it(
    tmp_path: Path,
):
    """The replica writes its calibration under the CPU's signature in its cache dir; where it cannot
    write it (here `calibration` is a file), it still becomes ready and claims its capacity."""
    weights = TTSConfig.from_env().cache_dir
    writable, readonly = tmp_path / "writable", tmp_path / "readonly"
    for cache in (writable, readonly):
        cache.mkdir()
        for item in weights.glob("kokoro-*"):
            (cache / item.name).symlink_to(item)
    (readonly / "calibration").write_text("not a directory")
    with tts_container({"TTS_CACHE_DIR": str(writable)}) as (server, _):
        load = httpx.get(f"{server.http}/ping", timeout=10).json()["load"]
    [kept] = (writable / "calibration").glob("*.json")
    assert json.loads(kept.read_text())["signature"] == load["calibration"]["signature"]
    with tts_container({"TTS_CACHE_DIR": str(readonly)}) as (server, _):
        load = httpx.get(f"{server.http}/ping", timeout=10).json()["load"]
    assert load["capacity"] >= 1 and load["calibration"]["decode_frame_ms"] > 0
