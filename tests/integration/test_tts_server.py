"""The real container (`python -m tts serve`, real Kokoro) over a real WebSocket and real HTTP."""

import asyncio
import base64
import contextlib
import io
import json

import av
import httpx
import pytest

from tools import tts_client
from tools.tts_client import Transcript, close_and_drain, is_control, read_until
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

SENTENCES = ["Thanks for waiting, I found your order.", "It shipped yesterday."]


async def collect(ws, until: int = 1) -> tuple[list[dict], dict[str, bytes]]:
    """Read frames until `until` terminal control frames arrived; audio is grouped by request."""
    controls, audio, current, done = [], {}, None, 0
    while done < until:
        frame = await asyncio.wait_for(ws.receive(), 60)
        if isinstance(frame, bytes):
            audio[current] = audio.get(current, b"") + frame
            continue
        message = frame
        controls.append(message)
        if message["type"] == "synthesis_start":
            current = message["request_id"]
        if message["type"] in {"synthesis_complete", "cancelled"}:
            done += 1
    return controls, audio


def connect(server):
    return tts_client.connect(server.ws)


@pytest.mark.parametrize("binary", [False, True], ids=["text-frames", "binary-frames"])
async def test_two_sentences_on_one_session(tts_server, binary):
    async with connect(tts_server) as ws:
        for n, text in enumerate(SENTENCES):
            payload = json.dumps({"text": text, "request_id": f"s{n}"})
            await ws.send(payload.encode() if binary else payload)
        controls, audio = await collect(ws, until=2)
        types = [(c["type"], c["request_id"]) for c in controls]
        assert types == [
            ("synthesis_start", "s0"),
            ("synthesis_complete", "s0"),
            ("synthesis_start", "s1"),
            ("synthesis_complete", "s1"),
        ]
        for n in range(2):
            complete = controls[2 * n + 1]
            assert len(audio[f"s{n}"]) == complete["audio_bytes"] == int(complete["duration_s"] * 48000)
            assert complete["duration_s"] > 1.0
            assert complete["segments"] == 1, "one sentence is one segment, however many decoder windows"
        await ws.send(json.dumps({"type": "close"}))
        with pytest.raises(tts_client.SessionEnded) as ended:
            await asyncio.wait_for(ws.receive(), 60)
        assert ended.value.normal and ws.ws.close_code == 1000


async def test_frames_are_between_20_and_100_ms(tts_server):
    async with connect(tts_server) as ws:
        await ws.send(json.dumps({"text": "One short sentence."}))
        sizes = []
        while True:
            frame = await asyncio.wait_for(ws.receive(), 60)
            if isinstance(frame, bytes):
                sizes.append(len(frame))
            elif frame["type"] == "synthesis_complete":
                break
    assert len(sizes) > 3
    assert all(s <= 4800 for s in sizes) and all(s >= 960 for s in sizes[:-1])


async def test_every_bad_input_is_answered_and_the_session_survives(tts_server):
    bad = [
        b"\xc3\x28 not utf-8",
        "{oops",
        "[1, 2, 3]",
        '{"voice": "jm_kumo"}',
        '{"text": ""}',
        json.dumps({"text": "x" * 5000}),
        '{"text": "Hi.", "voice": "af_nobody"}',
        '{"text": "Hi.", "speed": 7}',
        '{"text": "Hi.", "format": "vorbis"}',
        '{"type": "teleport"}',
    ]
    expected = [
        "invalid_utf8",
        "invalid_json",
        "not_an_object",
        "missing_text",
        "empty_text",
        "text_too_long",
        "unknown_voice",
        "invalid_speed",
        "unknown_format",
        "unknown_type",
    ]
    async with connect(tts_server) as ws:
        for frame in bad:
            await ws.send(frame)
            error = await asyncio.wait_for(ws.receive(), 10)
            assert error["type"] == "error" and error["message"]
        codes = []
        for frame in bad:
            await ws.send(frame if isinstance(frame, bytes) else frame.encode())
            codes.append((await asyncio.wait_for(ws.receive(), 10))["code"])
        assert codes == expected
        await ws.send(json.dumps({"text": "Still here.", "request_id": "ok"}))
        controls, audio = await collect(ws)
        assert controls[-1]["type"] == "synthesis_complete" and len(audio["ok"]) > 10_000


async def test_cancel_drops_queued_and_in_flight_audio(tts_server):
    async with connect(tts_server) as ws:
        await ws.send(
            json.dumps(
                {"text": " ".join(["A long sentence that takes a while to speak."] * 3), "request_id": "long"}
            )
        )
        await ws.send(json.dumps({"text": "Queued behind it.", "request_id": "queued"}))
        await ws.send(json.dumps({"type": "cancel"}))
        controls, audio = await collect(ws)
        assert controls[-1] == {"type": "cancelled", "request_ids": ["long", "queued"]}
        await ws.send(json.dumps({"text": "After the barge-in.", "request_id": "next"}))
        controls, audio = await collect(ws)
        assert [c["type"] for c in controls][-1] == "synthesis_complete"
        assert set(audio) == {"next"}, "no audio of a cancelled request may follow `cancelled`"


async def test_cancel_one_request_by_id(tts_server):
    """Read on until the session ends: the cancelled request's audio must never arrive, not just not yet."""
    async with connect(tts_server) as ws:
        await ws.send(json.dumps({"text": "Keep this one.", "request_id": "keep"}))
        await ws.send(json.dumps({"text": "Drop this one.", "request_id": "drop"}))
        await ws.send(json.dumps({"type": "cancel", "request_id": "drop"}))
        await ws.send(json.dumps({"text": "And this one too.", "request_id": "after"}))
        transcript = await close_and_drain(ws, Transcript())
    assert [c["request_ids"] for c in transcript.controls("cancelled")] == [["drop"]]
    assert [c["request_id"] for c in transcript.controls("synthesis_complete")] == ["keep", "after"]
    assert set(transcript.audio()) == {"keep", "after"}
    assert transcript.closed


async def test_sessions_progress_concurrently(tts_server):
    """A second session is not starved by a first session's queue."""
    async with connect(tts_server) as busy, connect(tts_server) as other:
        for n in range(4):
            await busy.send(
                json.dumps({"text": f"Busy sentence number {n} goes here.", "request_id": f"b{n}"})
            )
        await other.send(json.dumps({"text": "Other session.", "request_id": "o"}))
        order = []

        async def watch(ws, name, count):
            controls, _ = await collect(ws, until=count)
            order.extend(
                (name, c["request_id"], asyncio.get_running_loop().time())
                for c in controls
                if c["type"] == "synthesis_complete"
            )

        await asyncio.gather(watch(busy, "busy", 4), watch(other, "other", 1))
        finished = {rid: t for _, rid, t in order}
        assert finished["o"] < finished["b3"]


async def test_a_long_job_does_not_hold_back_another_session(tts_server):
    """Turns are taken per segment, not per job: a short message in a second session gets its audio
    before the first session's two-segment message ends."""
    long_text = " ".join(["This sentence keeps the model busy for quite a while, on purpose."] * 8)
    async with connect(tts_server) as busy, connect(tts_server) as other:
        await busy.send(json.dumps({"text": long_text, "speed": 2.0, "request_id": "long"}))
        busy_transcript = await read_until(busy, Transcript(), is_control("synthesis_start"))
        await other.send(json.dumps({"text": "Short.", "request_id": "short"}))
        first_audio = {}

        async def watch(ws, transcript, rid):
            def done(frame):
                if isinstance(frame, bytes):
                    first_audio.setdefault(rid, asyncio.get_running_loop().time())
                return is_control("synthesis_complete", rid)(frame)

            await read_until(ws, transcript, done)
            return asyncio.get_running_loop().time()

        long_end, short_end = await asyncio.gather(
            watch(busy, busy_transcript, "long"), watch(other, Transcript(), "short")
        )
    (complete,) = busy_transcript.controls("synthesis_complete")
    assert complete["segments"] >= 2, "the long message must span several segments"
    assert first_audio["short"] < long_end and short_end < long_end


@pytest.mark.parametrize(
    ("fmt", "content_type"),
    [
        ("pcm", "audio/pcm;rate=24000;channels=1"),
        ("wav", "audio/wav"),
        ("mp3", "audio/mpeg"),
        ("aac", "audio/aac"),
        ("opus", "audio/ogg;codecs=opus"),
    ],
)
async def test_invocations_binary_in_every_format(tts_server, fmt, content_type):
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            f"{tts_server.http}/invocations", json={"text": "The package arrives on Thursday.", "format": fmt}
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers.get("transfer-encoding") == "chunked"
    data = response.content
    if fmt == "pcm":
        seconds = len(data) / 48000
    else:
        with av.open(io.BytesIO(data)) as container:
            stream = container.streams.audio[0]
            seconds = sum(f.samples for f in container.decode(stream)) / stream.sample_rate
    async with connect(tts_server) as ws:
        await ws.send(json.dumps({"text": "The package arrives on Thursday."}))
        controls, _ = await collect(ws)
    assert seconds == pytest.approx(controls[-1]["duration_s"], abs=0.1)


async def test_invocations_sse(tts_server):
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.post(
            f"{tts_server.http}/invocations",
            json={"text": "Streaming events.", "transport": "sse", "format": "mp3"},
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = SSEParser().feed(response.content)
    assert events[0]["type"] == "audio_stream_start" and events[-1]["type"] == "audio_stream_end"
    chunks = [e for e in events if e["type"] == "audio_chunk"]
    assert [c["seq"] for c in chunks] == list(range(len(chunks)))
    assert events[-1]["total_chunks"] == len(chunks)
    mp3 = b"".join(base64.b64decode(c["data"]) for c in chunks)
    with av.open(io.BytesIO(mp3)) as container:
        seconds = sum(f.samples for f in container.decode(audio=0)) / 24000
    assert seconds == pytest.approx(events[-1]["duration_s"], abs=0.1)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"\xff", "invalid_utf8"),
        (b"{", "invalid_json"),
        (b"[]", "not_an_object"),
        (b"{}", "missing_text"),
        (b'{"text": "hi", "format": "vorbis"}', "unknown_format"),
        (b'{"text": "hi", "transport": "x"}', "invalid_transport"),
    ],
)
async def test_invocations_bad_input_is_http_400_json(tts_server, body, code):
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(f"{tts_server.http}/invocations", content=body)
        assert response.status_code == 400
        assert response.json()["code"] == code
        assert (await client.get(f"{tts_server.http}/ping")).status_code == 200


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_invocations_refuse_a_huge_body_before_reading_it(tts_server, chunked):
    """A body announced (or streaming) far over the limit gets 413 while most of it was never sent."""
    reader, writer = await asyncio.open_connection(tts_server.host, tts_server.port)
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 100000000"
    writer.write(b"POST /invocations HTTP/1.1\r\nHost: tts\r\nContent-Type: application/json\r\n" + framing)
    writer.write(b"\r\n\r\n")
    part = b" " * 10_000

    async def send_slowly():
        with contextlib.suppress(ConnectionError):
            for _ in range(10_000):  # 100 MB if the server read it all
                writer.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
                await writer.drain()
                await asyncio.sleep(0.001)

    sender = asyncio.create_task(send_slowly())
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 413 ")
        assert not sender.done(), "the server answered only after the whole body"
    finally:
        sender.cancel()
        writer.close()


def test_ping_names_the_engine_and_its_device(tts_server):
    body = httpx.get(f"{tts_server.http}/ping", timeout=10).json()
    load = body.pop("load")
    assert body == {"status": "ok", "engine": "onnx", "device": "CPUExecutionProvider"}
    assert set(load) == {"sessions", "capacity", "saturated", "waiting", "calibration"}, load
    assert load["capacity"] >= 1 and load["calibration"]["decode_frame_ms"] > 0, load
