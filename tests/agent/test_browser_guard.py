"""The agent's HTTP surface and browsers (agent.browser_guard through agent.app, over HTTP in process):
the page's security headers allow exactly its own inline script and style, and a POST another site's
page could make a browser send is refused before a turn runs, while the page and non-browser clients
are served; a name re-pointed at the agent by another site's DNS (rebinding) gets nothing. The real page
under that policy is tests/integration/test_web_page.py."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from importlib import resources

import httpx
import pytest
import uvicorn
import websockets

import agent.model
from agent.app import create_app
from agent.config import AgentConfig
from host_guard import allowed_hosts, answers
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


@pytest.fixture
def served_agent(built_agents: list[SignalWatchingAgent]) -> Iterator[str]:
    """The agent on a real uvicorn server bound to 127.0.0.1 (as `python -m agent serve` runs it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(AgentConfig(port=port)), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


REBOUND = "evil.example"  # another site's name, re-pointed at 127.0.0.1 by its DNS (DNS rebinding)


async def test_a_rebound_name_gets_no_turn_and_no_conversation_though_its_origin_matches(
    served_agent: str, built_agents: list[SignalWatchingAgent]
) -> None:
    port = served_agent.rsplit(":", 1)[1]
    host = f"{REBOUND}:{port}"
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{served_agent}/invocations",
            json={"interrupt": {"played_ms": 0}},
            headers=SESSION | {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"},
        )
        page = await client.get(f"http://{served_agent}/", headers={"Host": host})
    assert response.status_code == 400 and response.json()["code"] == "unknown_host"
    assert "AGENT_ALLOWED_HOSTS" in response.json()["details"]
    assert page.status_code == 400
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(  # the browser's URL names the rebound name; the socket is ours
            f"ws://{host}/ws", origin=f"http://{host}", host="127.0.0.1", port=int(port)
        ):
            pass
    assert refused.value.response.status_code == 403
    assert built_agents == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "app.localhost", "[::1]"])
async def test_the_names_that_reach_a_loopback_agent_are_served(
    served_agent: str, built_agents: list[SignalWatchingAgent], host: str
) -> None:
    port = served_agent.rsplit(":", 1)[1]
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"http://{served_agent}/invocations",
            json={"interrupt": {"played_ms": 0}},
            headers=SESSION | {"Host": f"{host}:{port}", "Origin": f"http://{host}:{port}"},
        )
    assert response.status_code == 200 and "agent_end" in response.text


def test_agent_allowed_hosts_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_ALLOWED_HOSTS", "agent.internal, .corp.example")
    config = AgentConfig.from_env()
    assert answers("voice.corp.example", allowed_hosts(config.host, config.allowed_hosts))
    assert not answers("evil.example", allowed_hosts(config.host, config.allowed_hosts))
