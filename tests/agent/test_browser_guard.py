"""The agent's HTTP surface and browsers (agent.browser_guard through agent.app, over HTTP in process):
the page's security headers allow exactly its own inline script and style, and a POST another site's
page could make a browser send is refused before a turn runs, while the page and non-browser clients
are served. The real page under that policy is tests/integration/test_web_page.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources

import httpx
import pytest

import agent.model
from agent.app import create_app
from agent.config import AgentConfig
from tests.agent.doubles import SignalWatchingAgent

SESSION = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": "s" * 40}
AGENT = "http://127.0.0.1:8080"
PAGE = (resources.files("agent") / "web" / "index.html").read_text(encoding="utf-8")


@pytest.fixture
def built_agents(monkeypatch: pytest.MonkeyPatch) -> list[SignalWatchingAgent]:
    """Every session's agent, as it is built: a turn that ran built one and wrote a user message."""
    agents: list[SignalWatchingAgent] = []

    def build_agent(config: AgentConfig, model: object) -> SignalWatchingAgent:
        agents.append(SignalWatchingAgent(0.0, 1, "Hi. ".format))
        return agents[-1]

    monkeypatch.setattr(agent.model, "build_agent", build_agent)
    return agents


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(AgentConfig())), base_url=AGENT)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _policy(header: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (part.strip() for part in header.split(";")) if d}


async def test_the_page_allows_its_own_inline_script_and_style_by_hash_and_nothing_else() -> None:
    async with _client() as client:
        response = await client.get("/")
    assert response.status_code == 200 and response.text == PAGE
    policy = _policy(response.headers["content-security-policy"])
    (script,) = re.findall(r"<script>(.*?)</script>", PAGE, re.DOTALL)
    (style,) = re.findall(r"<style>(.*?)</style>", PAGE, re.DOTALL)
    assert policy["script-src"] == ["'self'", _sha256(script)] and policy["style-src"] == [_sha256(style)]
    assert policy["default-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    assert policy["connect-src"] == ["'self'"]
    assert "'unsafe-inline'" not in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    # What a hash cannot allow: inline style attributes, inline event handlers, other scripts.
    assert not re.search(r"\sstyle=|\son[a-z]+=|<script\s", PAGE)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://attacker.example", "Content-Type": "text/plain"},
        {"Origin": "https://attacker.example", "Content-Type": "application/x-www-form-urlencoded"},
        {"Origin": "https://attacker.example", "Content-Type": "application/json"},
        {"Origin": "null", "Content-Type": "text/plain"},
        {"Origin": "http://127.0.0.1:9999", "Content-Type": "text/plain"},  # another port: another origin
        {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
        {"Sec-Fetch-Site": "same-site", "Content-Type": "text/plain"},
    ],
    ids=["text", "form", "json", "null-origin", "other-port", "fetch-cross-site", "fetch-same-site"],
)
async def test_a_request_from_another_sites_page_is_refused_before_a_turn_runs(
    built_agents: list[SignalWatchingAgent], headers: dict[str, str]
) -> None:
    async with _client() as client:
        response = await client.post(
            "/invocations", content=json.dumps({"prompt": "Say something"}), headers=SESSION | headers
        )
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "cross_origin" and "only the agent's page may ask" in body["details"]
    assert built_agents == []


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": AGENT, "Sec-Fetch-Site": "same-origin"},  # the agent's own page
        {},  # curl, or boto3 through the emulator's AgentCore (which does not pass Origin on)
        {"Sec-Fetch-Site": "none"},  # typed into the browser's address bar, as a user does
    ],
    ids=["own-page", "no-origin", "user-initiated"],
)
async def test_the_page_and_clients_that_are_not_browsers_are_served(
    built_agents: list[SignalWatchingAgent], headers: dict[str, str]
) -> None:
    async with _client() as client:
        response = await client.post(
            "/invocations",
            json={"interrupt": {"played_ms": 0}},  # a turn that needs no speech: it builds the agent
            headers=SESSION | {"Content-Type": "application/json"} | headers,
        )
    assert response.status_code == 200 and "agent_end" in response.text
    assert len(built_agents) == 1
