"""host_guard: the Host names a local server answers (DNS rebinding), as the agent and the gateway use it;
each server's refusal through the middleware is in its own tests (tests/agent/test_browser_guard.py,
tests/gateway/test_refusals.py)."""

from __future__ import annotations

import pytest

from host_guard import allowed_hosts, answers


@pytest.mark.parametrize(
    ("bind", "configured", "host", "served"),
    [
        ("127.0.0.1", (), "evil.example", False),
        ("127.0.0.1", ("agent.internal",), "agent.internal:8080", True),
        ("127.0.0.1", (".corp.example",), "voice.corp.example", True),
        ("127.0.0.1", (".corp.example",), "corp.example.evil.example", False),
        ("127.0.0.1", (), "10.0.0.7:8080", True),  # an address: no name to re-point
        ("0.0.0.0", (), "anything.example", True),  # a container behind a proxy that chooses its Host
        ("0.0.0.0", ("agent.internal",), "evil.example", False),
        ("127.0.0.1", ("*",), "evil.example", True),
    ],
)
def test_which_hosts_a_server_answers_follows_its_bind_and_the_names_given(
    bind: str, configured: tuple[str, ...], host: str, served: bool
) -> None:
    assert answers(host, allowed_hosts(bind, configured)) is served
