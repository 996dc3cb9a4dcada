"""Sessions beside a speaking one (agent.model.Conversations): the least recently used conversation is
evicted once more than the limit exist, but never one whose turn still speaks. Before, 260 other
sessions touched while a turn spoke evicted it, and a second prompt on that session then got a fresh,
idle conversation and ran at the same time as the answer still speaking (an interrupt reached only the
new one)."""

from __future__ import annotations

import pytest

import agent.model
from agent.config import AgentConfig
from agent.model import Conversations

pytestmark = pytest.mark.reliability


@pytest.fixture
def conversations(monkeypatch: pytest.MonkeyPatch) -> Conversations:
    monkeypatch.setattr(agent.model, "build_agent", lambda config, model: type("A", (), {"messages": []})())
    return Conversations(AgentConfig(), limit=4)


def test_a_speaking_session_outlives_any_number_of_other_sessions(conversations: Conversations) -> None:
    speaking = conversations.for_session("speaking")
    spoken = speaking.start_turn()  # its speech streams until `ended` is set
    for n in range(260):
        conversations.for_session(f"other-{n}")
    again = conversations.for_session("speaking")
    assert again is speaking and again.busy(), "the speaking session was evicted"
    spoken.ended.set()
    for n in range(8):
        conversations.for_session(f"later-{n}")
    assert conversations.for_session("speaking") is not speaking, "an idle session is evicted as before"


def test_idle_sessions_are_still_evicted_least_recent_first(conversations: Conversations) -> None:
    first = conversations.for_session("a")
    for name in "bcd":
        conversations.for_session(name)
    conversations.for_session("a")  # touched: now the most recent
    conversations.for_session("e")  # over the limit of 4: b, the least recent, goes
    assert conversations.for_session("a") is first
    assert len(conversations._conversations) == 4 and "b" not in conversations._conversations
