"""Hostile payloads to the agent's `POST /invocations` (the AgentCore SDK app of agent/app.py, served
in-process): every one gets a typed answer that ends cleanly, never a 500 or a 200 whose body breaks
off. Payload errors are in-band (`error` + `agent_end`); a body Python cannot parse is the SDK's 400.
No model or endpoint is reached: each payload is refused before the turn starts."""

from __future__ import annotations

import json

import httpx
import pytest

from agent.app import create_app
from agent.config import AgentConfig
from tests.reliability.emulator_support import say

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def app():
    return create_app(AgentConfig())


async def post(app, body: bytes) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        return await client.post("/invocations", content=body, headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"prompt": "hi", "mode": ["bidi"]}, "invalid_mode"),
        ({"prompt": "hi", "mode": {}}, "invalid_mode"),
        ({"prompt": "hi", "mode": None}, "invalid_mode"),
        ({"prompt": "hi", "voice": ["jm_kumo"]}, "invalid_voice"),
        ({"prompt": "hi", "voice": 7}, "invalid_voice"),
        ({"prompt": "hi", "format": {"pcm": 1}}, "invalid_format"),
        ({"prompt": "hi", "format": ["pcm"]}, "invalid_format"),
        ({"prompt": ["hi"]}, "invalid_prompt"),
        ({"prompt": {"text": "hi"}}, "invalid_prompt"),
        ({"prompt": 3}, "invalid_prompt"),
        ({"prompt": None}, "invalid_prompt"),
        ({"prompt": "\ud800 hi"}, "invalid_prompt"),
        ({}, "missing_prompt"),
        ([{"prompt": "hi"}], "invalid_payload"),
    ],
)
async def test_a_payload_of_the_wrong_shape_is_a_typed_error_event(app, payload, code) -> None:
    response = await post(app, json.dumps(payload).encode())
    events = [json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: ")]
    say(f"invocations {json.dumps(payload)[:50]}", f"{response.status_code} {[e['type'] for e in events]}")
    assert response.status_code == 200
    assert [e["type"] for e in events] == ["error", "agent_end"]
    assert events[0]["code"] == code and events[0]["message"]
    assert events[1]["ok"] is False


@pytest.mark.parametrize(
    ("case", "body"),
    [
        ("a 5,000-digit integer", b'{"prompt": "hi", "n": ' + b"9" * 5000 + b"}"),
        (
            "objects nested 100,000 deep",
            b'{"prompt": "hi", "a": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_001,
        ),
        ("arrays nested 100,000 deep", b'{"prompt": "hi", "a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ("not JSON at all", b"{prompt: hi"),
    ],
)
async def test_a_body_python_cannot_parse_is_the_sdks_400(app, case: str, body: bytes) -> None:
    response = await post(app, body)
    say(f"invocations with {case}", f"{response.status_code} {response.text[:60]}")
    assert response.status_code == 400
    assert response.json()["error"] == "Invalid JSON" and response.json()["details"]
