"""A consumer that stops reading for 20 s: the container's memory stays bounded, other sessions are
served meanwhile, and the stalled session gets all its audio once it reads again. And, with the
container in this process so that its scheduler's counters can be read: synthesis runs no further than
the bound (tts.scheduling.scheduler.AHEAD_LIMIT_S) ahead of a client that reads nothing."""

import asyncio
import json
import socket

import psutil
import pytest
import uvicorn

from facts import SAMPLE_RATE
from tests.support.tts_container import tts_container
from tools import tts_client as tts
from tts.config import TTSConfig
from tts.scheduling.scheduler import AHEAD_LIMIT_BYTES
from tts.serving.app import create_app

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.slow]

STALL_S = 20
MAX_STALL_S = 240
MAX_GROWTH_MB = 48  # 2 MB measured with the arena warmed; the four answers' audio is 1.4 MB
TEXT = "The stalled listener asked for a long answer. It has several sentences. Nobody reads them yet."


@pytest.fixture(scope="module")
def server_process():
    with tts_container() as (server, process):
        yield server, psutil.Process(process.pid)


@pytest.mark.timeout(600)
async def test_a_stalled_consumer_keeps_memory_bounded(server_process):
    server, process = server_process
    # onnxruntime's arena grows once to the largest shapes it has run, by ~150 MB for what follows: the
    # same four messages read normally first, so that what the stall costs is what is measured.
    async with tts.connect(server.ws) as warm:
        for n in range(4):
            await warm.send(json.dumps({"text": TEXT, "request_id": f"w{n}"}))
        await tts.close_and_drain(warm, tts.Transcript())
    baseline = process.memory_info().rss
    sock = socket.create_connection((server.host, server.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # No client keepalive: a client that reads nothing cannot see the pong either, and would close the
    # session itself (1011) once a stall on a busy machine outlasts ping interval + timeout (40 s).
    async with tts.connect(server.ws, sock=sock, max_queue=1, ping_interval=None) as stalled:
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
        # Reading again, at full speed: with a 4 KiB window TCP moves ~40 kB/s on loopback (a delayed
        # ACK per window), slower than the audio plays, and the container's keepalive ping waits behind
        # 1.4 MB of it for over 20 s, so the container would rightly close the session as dead (1011).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
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


# The largest step of the default window plan: 120 frames plus a remainder under half a step (4.5 s).
MAX_STEP_BYTES = int(4.5 * SAMPLE_RATE) * 2
AHEAD_STALL_S = 15


@pytest.mark.timeout(600)
async def test_synthesis_runs_no_further_ahead_than_the_bound_while_the_client_reads_nothing():
    """Six long messages (about 36 s of audio) and no reads for 15 s: the scheduler's count of audio
    computed and not yet taken stays within AHEAD_LIMIT_BYTES plus one step; then every byte, in order."""
    # The kernel's send buffer on loopback grows to megabytes (minutes of PCM) before the server's
    # writes block; a small one, as a real network's round trip would make it, reaches the bound here.
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)  # inherited by accepted sockets
    port = listener.getsockname()[1]
    app = create_app(TTSConfig.from_env(threads=2))
    server = uvicorn.Server(uvicorn.Config(app, ws="websockets-sansio", log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        host = app.state.model_host
        await asyncio.wait_for(host.ready.wait(), 180)
        url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        peak = 0
        async with tts.connect(url, sock=sock, max_queue=1) as stalled:
            for n in range(6):
                await stalled.send(json.dumps({"text": TEXT, "request_id": f"s{n}", "format": "pcm"}))
            for _ in range(AHEAD_STALL_S * 4):
                await asyncio.sleep(0.25)
                peak = max(peak, *host.scheduler.ahead_bytes.values(), 0)
            transcript = await tts.read_until(
                stalled, tts.Transcript(), tts.is_control("synthesis_complete", "s5")
            )
            await tts.close_and_drain(stalled, transcript)
    finally:
        server.should_exit = True
        await serving
    completes = transcript.controls("synthesis_complete")
    audio = transcript.audio()
    total = sum(c["audio_bytes"] for c in completes)
    seconds = 2 * SAMPLE_RATE
    print(f"\nahead of a client that read nothing: peak {peak / seconds:.1f} s of {total / seconds:.1f} s")
    assert peak <= AHEAD_LIMIT_BYTES + MAX_STEP_BYTES < total / 2
    assert [c["request_id"] for c in completes] == [f"s{n}" for n in range(6)]
    assert all(audio[c["request_id"]] == c["audio_bytes"] > 0 for c in completes)
