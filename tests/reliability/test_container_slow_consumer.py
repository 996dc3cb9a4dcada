"""A consumer that stops reading for 20 s: the container's memory stays bounded, other sessions are
served meanwhile, and the stalled session gets all its audio once it reads again."""

import asyncio
import json
import socket

import psutil
import pytest

from tests.support import tts_session as tts

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.slow]

STALL_S = 20
MAX_STALL_S = 240
MAX_GROWTH_MB = 128  # onnxruntime and the allocator take tens of MB in steps; the audio is ~1.4 MB
TEXT = "The stalled listener asked for a long answer. It has several sentences. Nobody reads them yet."


@pytest.fixture(scope="module")
def server_process():
    with tts.tts_container() as (server, process):
        yield server, psutil.Process(process.pid)


@pytest.mark.timeout(600)
async def test_a_stalled_consumer_keeps_memory_bounded(server_process):
    server, process = server_process
    async with tts.connect(server.ws) as warm:  # onnxruntime's arena grows to this text's size once
        await warm.send(json.dumps({"text": TEXT, "request_id": "warm"}))
        await tts.close_and_drain(warm, tts.Transcript())
    baseline = process.memory_info().rss
    sock = socket.create_connection((server.host, server.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    async with tts.connect(server.ws, sock=sock, max_queue=1) as stalled:
        for n in range(4):
            await stalled.send(json.dumps({"text": TEXT, "request_id": f"s{n}"}))
        samples = []
        async with tts.connect(server.ws) as other:
            await other.send(json.dumps({"text": "Still serving others.", "request_id": "other"}))
            served = asyncio.create_task(
                tts.read_until(other, tts.Transcript(), tts.is_control("synthesis_complete"))
            )
            # Stall for STALL_S, and on until the other session is served (bounded: a hang fails).
            while len(samples) < STALL_S or not served.done():
                assert len(samples) < MAX_STALL_S, "another session was not served during the stall"
                await asyncio.sleep(1)
                samples.append((process.memory_info().rss - baseline) / 2**20)
            other_transcript = served.result()
        transcript = await tts.read_until(
            stalled, tts.Transcript(), tts.is_control("synthesis_complete", "s3")
        )
        await tts.close_and_drain(stalled, transcript)
    print(f"\nRSS growth while the consumer did not read (MB, per second): {[round(s) for s in samples]}")
    completes = transcript.controls("synthesis_complete")
    audio = transcript.audio()
    print(f"then received: {audio}")
    assert max(samples) < MAX_GROWTH_MB
    assert other_transcript.controls("synthesis_complete"), "another session is served during the stall"
    assert [c["request_id"] for c in completes] == ["s0", "s1", "s2", "s3"]
    assert all(audio[c["request_id"]] == c["audio_bytes"] > 0 for c in completes)
