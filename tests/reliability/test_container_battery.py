"""The bad-input battery against the real container, as tables of input -> typed outcome.

Over the WebSocket every bad frame must get an `error` with its stable code, and the same session
must then still synthesize; over `POST /invocations` every bad request gets its HTTP status and typed
JSON, never a 500 or a dropped connection. Meanwhile another session streams a long answer, which must
arrive whole. Each test prints what it sent and what came back.
"""

import asyncio
import json
import time

import httpx
import pytest

from tools.tts_client import Transcript, close_and_drain, connect, is_control, read_until

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_UNDER_THE_BODY_LIMIT = "[" * 30_000 + "]" * 30_000
HUGE = "9" * 4301

# (what, frame, error code)
WEBSOCKET_CASES = [
    ("not UTF-8", b"\xc3\x28 not utf-8", "invalid_utf8"),
    ("not JSON", "{oops", "invalid_json"),
    ("an array", "[1, 2, 3]", "not_an_object"),
    ("no text", '{"voice": "jm_kumo"}', "missing_text"),
    ("empty text", '{"text": ""}', "empty_text"),
    ("5000 characters", json.dumps({"text": "x" * 5000}), "text_too_long"),
    ("unknown voice", '{"text": "Hi.", "voice": "af_nobody"}', "unknown_voice"),
    ("speed 7", '{"text": "Hi.", "speed": 7}', "invalid_speed"),
    ("format vorbis", '{"text": "Hi.", "format": "vorbis"}', "unknown_format"),
    ("unknown type", '{"type": "teleport"}', "unknown_type"),
    ("lone surrogate in request_id", '{"text": "Hi.", "request_id": "\\ud800"}', "invalid_unicode"),
    ("4301-digit integer", '{"text": "Hi.", "speed": ' + HUGE + "}", "invalid_json"),
    ("nested 100,000 deep", '{"text": "Hi.", "x": ' + DEEP + "}", "invalid_json"),
    ("lone surrogate id, empty text", '{"text": "", "request_id": "\\udfff"}', "invalid_unicode"),
    ("lone surrogate in text", '{"text": "Hi \\ud800 there."}', "invalid_unicode"),
    ("NaN speed", '{"text": "Hi.", "speed": NaN}', "invalid_json"),
    ("unknown transport", '{"text": "Hi.", "transport": "carrier-pigeon"}', "invalid_transport"),
    ("sse transport on the WebSocket", '{"text": "Hi.", "transport": "sse"}', "invalid_transport"),
    ("only a NUL", '{"text": "\\u0000"}', "nothing_to_speak"),
    ("only a dash (G2P finds nothing)", '{"text": "-"}', "nothing_to_speak"),
    ("lone surrogate in cancel", '{"type": "cancel", "request_id": "\\ud800"}', "invalid_unicode"),
]

# (what, body, extra headers, HTTP status, error code)
INVOCATION_CASES = [
    ("not UTF-8", b"\xff", {}, 400, "invalid_utf8"),
    ("not JSON", b"{", {}, 400, "invalid_json"),
    ("an array", b"[]", {}, 400, "not_an_object"),
    ("no text", b"{}", {}, 400, "missing_text"),
    ("format vorbis", b'{"text": "hi", "format": "vorbis"}', {}, 400, "unknown_format"),
    ("unknown transport", b'{"text": "hi", "transport": "x"}', {}, 400, "invalid_transport"),
    ("4301-digit integer", b'{"text": "Hi.", "speed": ' + HUGE.encode() + b"}", {}, 400, "invalid_json"),
    (
        "nested 30,000 deep",
        b'{"text": "Hi.", "x": ' + DEEP_UNDER_THE_BODY_LIMIT.encode() + b"}",
        {},
        400,
        "invalid_json",
    ),
    ("nested 100,000 deep (200 KB)", b'{"x": ' + DEEP.encode() + b"}", {}, 413, "body_too_large"),
    ("lone surrogate id, empty text", b'{"text": "", "request_id": "\\ud800"}', {}, 400, "invalid_unicode"),
    ("lone surrogate in text, binary", b'{"text": "Hi \\ud800 there."}', {}, 400, "invalid_unicode"),
    (
        "lone surrogate in text, sse",
        b'{"text": "Hi \\ud800.", "transport": "sse"}',
        {},
        400,
        "invalid_unicode",
    ),
    ("only a NUL", b'{"text": "\\u0000"}', {}, 400, "nothing_to_speak"),
    ("only a dash (G2P finds nothing)", b'{"text": "-"}', {}, 400, "nothing_to_speak"),
    ("70 KB body", json.dumps({"text": "Hi.", "pad": "x" * 70_000}).encode(), {}, 413, "body_too_large"),
    ("text/csv", b'{"text": "Hi."}', {"content-type": "text/csv"}, 415, "unsupported_media_type"),
    (
        "a form",
        b"text=Hi.",
        {"content-type": "application/x-www-form-urlencoded"},
        415,
        "unsupported_media_type",
    ),
]

# Content types a SageMaker caller may send with a JSON body (see tts/README.md).
ACCEPTED_MEDIA_TYPES = [None, "application/json; charset=utf-8", "application/octet-stream", "text/plain"]

BYSTANDER_TEXT = "I am another user, and my answer keeps streaming while someone else sends garbage."


async def bystander(url: str) -> Transcript:
    """Another session with a long answer in flight during the battery."""
    async with connect(url) as ws:
        await ws.send(json.dumps({"text": BYSTANDER_TEXT, "request_id": "bystander"}))
        transcript = await read_until(ws, Transcript(), is_control("synthesis_complete", "bystander"))
        return await close_and_drain(ws, transcript)


def assert_whole(transcript: Transcript) -> None:
    (complete,) = transcript.controls("synthesis_complete")
    assert not transcript.controls("error")
    assert transcript.audio()["bystander"] == complete["audio_bytes"] > 48_000
    assert transcript.closed


def report(title: str, rows: list[tuple[str, str, str, float]]) -> None:
    print(f"\n{title}")
    for what, sent, outcome, ms in rows:
        print(f"  {what:34} {sent:44} -> {outcome:60} {ms:7.0f} ms")


async def test_websocket_battery_keeps_the_session_and_other_sessions(tts_server):
    other = asyncio.create_task(bystander(tts_server.ws))
    rows = []
    async with connect(tts_server.ws) as ws:
        for n, (what, frame, code) in enumerate(WEBSOCKET_CASES):
            started = time.perf_counter()
            await ws.send(frame)
            transcript = await read_until(ws, Transcript(), is_control("error"), timeout_s=60)
            (error,) = transcript.controls("error")
            await ws.send(json.dumps({"text": "Yes.", "request_id": f"good{n}"}))
            await read_until(ws, transcript, is_control("synthesis_complete", f"good{n}"), timeout_s=120)
            got = transcript.audio().get(f"good{n}", 0)
            rows.append((what, repr(frame)[:44], f"{error['code']}; then {got} B of audio", _ms(started)))
            assert error["code"] == code and error["message"], (what, error)
            assert got > 10_000, f"the session must still synthesize after {what}"
        assert (await close_and_drain(ws, Transcript())).closed
    report("WebSocket battery (input -> error code; a good message right after)", rows)
    assert_whole(await asyncio.wait_for(other, 300))


async def test_invocations_battery_is_typed_json_and_never_a_500(tts_server):
    other = asyncio.create_task(bystander(tts_server.ws))
    rows = []
    async with httpx.AsyncClient(base_url=tts_server.http, timeout=120) as client:
        for what, body, headers, status, code in INVOCATION_CASES:
            started = time.perf_counter()
            response = await client.post("/invocations", content=body, headers=headers)
            outcome = f"{response.status_code} {response.text[:60]}"
            rows.append((what, repr(body)[:44], outcome, _ms(started)))
            assert response.status_code == status, (what, response.text[:200])
            assert response.headers["content-type"] == "application/json"
            assert response.json()["code"] == code and response.json()["message"]
            assert (await client.get("/ping")).status_code == 200
        for content_type in ACCEPTED_MEDIA_TYPES:
            headers = {} if content_type is None else {"content-type": content_type}
            started = time.perf_counter()
            response = await client.post("/invocations", content=b'{"text": "Yes."}', headers=headers)
            rows.append(
                (
                    f"Content-Type {content_type}",
                    "",
                    f"{response.status_code}, {len(response.content)} B",
                    _ms(started),
                )
            )
            assert response.status_code == 200 and len(response.content) > 10_000, content_type
    report("POST /invocations battery (input -> HTTP status)", rows)
    assert_whole(await asyncio.wait_for(other, 300))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
