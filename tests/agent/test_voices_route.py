"""`GET /voices` (agent.app): the TTS endpoint's own voice list for the page's picker, asked in-band on a
session (`{"type": "voices"}`); an endpoint that cannot answer is a 502 with its reason, never a 500."""

from __future__ import annotations

import httpx
import pytest

from agent.app import Speech, create_app
from agent.config import AgentConfig
from agent.endpoint_stream import EndpointStreamError

LISTED = {
    "type": "voices",
    "voices": ["af_heart", "bm_george"],
    "default": "af_heart",
    "data": [
        {"id": "af_heart", "name": "af_heart", "language": "en-us", "gender": "female"},
        {"id": "bm_george", "name": "bm_george", "language": "en-gb", "gender": "male"},
    ],
}


class Listing:
    """A TTS session that answers the voice request with `answer` (or raises it)."""

    def __init__(self, answer: dict | Exception) -> None:
        self.answer = answer
        self.closed = False

    async def __aenter__(self) -> Listing:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.closed = True

    async def voices(self) -> dict:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (LISTED, 200),
        (EndpointStreamError("ValidationError", "no endpoint kokoro-82m"), 502),
        (KeyError("/internal/path secret"), 502),
    ],
)
async def test_the_pages_voice_list_is_the_endpoints(monkeypatch, answer, status):
    sessions: list[Listing] = []

    async def open_session(speech: Speech) -> Listing:
        sessions.append(Listing(answer))
        return sessions[-1]

    monkeypatch.setattr(Speech, "open_session", open_session)
    app = create_app(AgentConfig())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8080"
    ) as client:
        response = await client.get("/voices")
    assert response.status_code == status
    if status == 200:
        assert response.json() == LISTED
    elif isinstance(answer, EndpointStreamError):  # the endpoint's typed reason is passed on
        assert "no endpoint kokoro-82m" in response.json()["error"]
    else:  # an error of ours is logged, never shown to the page
        assert "secret" not in response.text and "KeyError" not in response.text
        assert "not available" in response.json()["error"]
    assert sessions[0].closed, "the session is closed either way"
