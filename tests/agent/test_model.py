"""The model side of a turn (agent.model.text_deltas), with a stand-in for the Strands agent
(tests/agent/doubles.py): a consumer that goes away stops the model within a delta, and a session
answers one turn at a time."""

from __future__ import annotations

import asyncio

import pytest

from agent.model import Conversation, SessionBusy, answering, text_deltas
from tests.agent.doubles import SignalWatchingAgent


async def test_a_consumer_that_goes_away_stops_the_model_within_a_delta() -> None:
    agent = SignalWatchingAgent(interval_s=0.02)
    deltas = text_deltas(agent, "Tell me a long story")
    assert (await anext(deltas)).startswith("word0")
    await deltas.aclose()
    await asyncio.wait_for(agent.finished.wait(), timeout=1.0)
    assert agent.produced <= 3  # not the 500 deltas of the whole answer


async def test_a_cancelled_turn_stops_the_model_within_a_delta() -> None:
    agent = SignalWatchingAgent(interval_s=0.02)

    async def consume() -> None:
        async for _ in text_deltas(agent, "Tell me a long story"):
            pass

    turn = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    turn.cancel()
    await asyncio.wait_for(agent.finished.wait(), timeout=1.0)
    assert agent.produced <= 8


async def test_one_turn_at_a_time_per_session_and_an_abandoned_one_is_waited_for() -> None:
    agent = SignalWatchingAgent(interval_s=0.02)
    first = text_deltas(agent, "first")
    await anext(first)
    assert answering(agent)
    second = text_deltas(agent, "second, while the first is answering")
    with pytest.raises(SessionBusy):
        await anext(second)
    await first.aclose()  # abandoned: the next turn waits for it to let go, then runs
    third = text_deltas(agent, "third")
    assert (await anext(third)).startswith("word0")
    await third.aclose()
    await asyncio.wait_for(agent.finished.wait(), timeout=1.0)


async def test_a_discarded_turn_stops_its_model_and_leaves_the_history_as_before_it() -> None:
    """A turn started before the user had finished (agent.turn_taking) and thrown away: the next turn's
    model sees the conversation as if it had never run."""
    agent = SignalWatchingAgent(interval_s=0.02)
    conversation = Conversation(agent)  # type: ignore[arg-type]
    conversation.start_turn()
    async for _ in text_deltas(agent, "What is the capital of France?"):
        break  # a first turn, answered (the double records its answer)
    await asyncio.wait_for(agent.finished.wait(), timeout=1.0)
    before = list(agent.messages)
    conversation.start_turn()
    speculative = text_deltas(agent, "Could you find me?")
    await anext(speculative)
    await conversation.discard()
    assert agent.finished.is_set() and agent.produced < 20  # the model stopped
    assert agent.messages == before and conversation.spoken is None
    await speculative.aclose()


async def test_discarding_the_first_turn_leaves_an_empty_history() -> None:
    agent = SignalWatchingAgent(interval_s=0.02)
    conversation = Conversation(agent)  # type: ignore[arg-type]
    conversation.start_turn()
    deltas = text_deltas(agent, "Could you find me?")
    await anext(deltas)
    await conversation.discard()
    assert agent.messages == []
    await deltas.aclose()
