"""Turn-taking in a spoken conversation (agent.turn_taking, agent.listening): which utterances heard over
an answer leave it playing, a turn started at a pause and then taken or thrown away, and the playback
clock that stands still while the answer is paused. The conversation runs here on scripted
speech-to-text messages and a scripted turn; tests/integration/test_listening.py runs it on the real
containers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.websockets import WebSocketState

from agent.config import BACKCHANNELS
from agent.events import EventClock, agent_end, agent_start, audio_chunk, interrupted, text_delta
from agent.listening import SpokenConversation
from agent.turn_taking import Playback, Speculation, TurnTaking, ignorable, same_words, takes_the_turn_early
from facts import PCM_BYTES_PER_S

LISTED = frozenset(BACKCHANNELS)


@pytest.mark.parametrize(
    "text",
    ["Mm-hmm.", "Yeah.", "Right.", "Okay.", "Yeah, okay.", "Uh-huh", "", " (coughing) ", "[MUSIC]", "I see."],
)
def test_backchannels_and_noises_leave_the_answer_playing(text: str) -> None:
    assert ignorable(text, LISTED)


@pytest.mark.parametrize(
    "text", ["Wait.", "What about tomorrow?", "Yeah, but how far is it?", "Okay okay okay.", "No."]
)
def test_words_that_take_the_turn_interrupt_it(text: str) -> None:
    assert not ignorable(text, LISTED)


def test_a_partial_takes_the_turn_early_once_it_has_three_words_not_all_backchannels() -> None:
    assert takes_the_turn_early("What about Spain", LISTED)
    assert not takes_the_turn_early("Uh", LISTED)  # a backchannel's garbled partial: wait for the final
    assert not takes_the_turn_early("Yeah, okay", LISTED)
    assert not takes_the_turn_early("Wait", LISTED)  # its final decides
    assert not takes_the_turn_early("M.M. H.", LISTED)  # a hum spelled out


def test_a_held_turn_is_taken_by_the_same_words_only() -> None:
    assert same_words("What is the capital of France?", "what is the capital of france")
    assert not same_words("Could you find me?", "Could you find me a train to the coast?")


def test_a_speculation_holds_its_events_until_taken_and_counts_what_it_computed() -> None:
    clock = EventClock()
    speculation = Speculation(1, "Why is the sky blue?")
    assert speculation.hold(text_delta(clock, 0, "Because"))
    assert speculation.hold(audio_chunk(clock, 0, b"\x00" * 4800, 0))
    waste = speculation.waste()
    assert (waste["text_chars"], waste["audio_chunks"], waste["audio_bytes"]) == (7, 1, 4800)
    held = speculation.adopt()
    assert [e["type"] for e in held] == ["text_delta", "audio_chunk"]
    assert not speculation.hold(text_delta(clock, 1, " light"))  # taken: sent as it comes


def test_a_paused_playback_stands_still_and_resumes_from_where_it_paused() -> None:
    clock, playback = EventClock(), Playback()
    playback.sent(agent_start(clock, "bidi", "v", "pcm"))
    playback.sent(audio_chunk(clock, 0, b"\x00" * PCM_BYTES_PER_S, 0))  # 1 s
    time.sleep(0.05)
    playback.pause()
    paused = playback.played_ms()
    time.sleep(0.1)
    assert playback.played_ms() == paused and playback.playing()
    playback.resume()
    time.sleep(0.05)
    assert playback.played_ms() >= paused + 40


class FakeSocket:
    """The client's side of `/ws`: what it sends (nothing but a disconnect at the end) and what it got."""

    def __init__(self) -> None:
        self.application_state = WebSocketState.CONNECTED
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()

    async def accept(self) -> None:
        pass

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "websocket.disconnect"}

    async def send_text(self, text: str) -> None:
        self.sent.append(json.loads(text))

    async def close(self, code: int = 1000) -> None:
        self.application_state = WebSocketState.DISCONNECTED

    def types(self) -> list[str]:
        return [e["type"] for e in self.sent]


class ScriptedSTT:
    """The speech-to-text session: its messages are the test's script."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def __aenter__(self) -> ScriptedSTT:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    async def start(self) -> None:
        pass

    async def messages(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            yield await self.queue.get()


class ScriptedTurns:
    """The agent's turns: each answer writes, sends 2 s of audio, and runs until interrupted or cancelled."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.stop = asyncio.Event()
        self.discarded: list[str] = []

    async def __call__(self, payload: dict[str, Any], session_id: str | None) -> AsyncIterator[dict]:
        self.payloads.append(payload)
        clock = EventClock()
        if "prompt" not in payload:
            self.stop.set()
            yield interrupted(clock, payload["interrupt"]["played_ms"], "Paris [interrupted]")
            yield agent_end(clock, ok=True)
            return
        yield agent_start(clock, "bidi", "v", "pcm")
        yield text_delta(clock, 0, "Paris.")
        yield audio_chunk(clock, 0, b"\x00" * 2 * PCM_BYTES_PER_S, 0)
        await self.stop.wait()
        yield agent_end(clock, ok=True)

    async def discard(self, session_id: str) -> None:
        self.discarded.append(session_id)

    def prompts(self) -> list[str]:
        return [p["prompt"] for p in self.payloads if "prompt" in p]


@contextlib.asynccontextmanager
async def conversation(backchannels: frozenset[str] | None = LISTED, preempt: float | None = 0.2):
    socket, stt, turns = FakeSocket(), ScriptedSTT(), ScriptedTurns()

    async def open_stt() -> ScriptedSTT:
        return stt

    rules = TurnTaking(backchannels, preempt, turns.discard)
    running = SpokenConversation(socket, "s", turns, open_stt, lambda settings: None, rules)  # type: ignore[arg-type]
    task = asyncio.create_task(running.run())
    try:
        yield socket, stt, turns
    finally:
        socket.gone.set()
        await asyncio.wait_for(task, 10)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


def final(utterance: int, text: str) -> dict[str, Any]:
    return {"type": "final", "utterance": utterance, "text": text, "start_ms": 0, "end_ms": 1000}


def pause(utterance: int, text: str, complete: float, ends: bool) -> dict[str, Any]:
    return {"type": "pause", "utterance": utterance, "text": text, "complete": complete, "ends": ends}


def started(utterance: int) -> dict[str, Any]:
    return {"type": "speech_started", "utterance": utterance, "start_ms": 0}


async def answering(stt: ScriptedSTT) -> None:
    """The first utterance's answer is under way."""
    for message in (started(1), final(1, "What is the capital of France?")):
        stt.queue.put_nowait(message)
    await settle()


@pytest.mark.parametrize("heard", ["Mm-hmm.", "", "Yeah, okay."])
async def test_a_backchannel_or_a_cough_over_the_answer_resumes_it(heard: str) -> None:
    async with conversation() as (socket, stt, turns):
        await answering(stt)
        stt.queue.put_nowait(started(2))
        stt.queue.put_nowait(final(2, heard))
        await settle()
        assert "answer_resumed" in socket.types() and "interrupted" not in socket.types()
        assert turns.prompts() == ["What is the capital of France?"] and not turns.stop.is_set()


async def test_real_words_over_the_answer_interrupt_it_at_the_partial_and_are_the_next_turn() -> None:
    async with conversation() as (socket, stt, turns):
        await answering(stt)
        await asyncio.sleep(1.0)  # over a second of the answer heard: a new question, not the rest
        stt.queue.put_nowait(started(2))
        await asyncio.sleep(0.2)  # paused: the played position stands still from here
        stt.queue.put_nowait({"type": "partial", "utterance": 2, "text": "What about Spain"})
        await settle()
        assert "interrupted" in socket.types() and turns.stop.is_set()
        played = [p["interrupt"]["played_ms"] for p in turns.payloads if "interrupt" in p]
        assert len(played) == 1 and 1000 <= played[0] < 1400
        turns.stop.clear()
        stt.queue.put_nowait(final(2, "What about Spain?"))
        await settle()
        assert turns.prompts() == ["What is the capital of France?", "What about Spain?"]
        turns.stop.set()


async def test_words_over_an_answer_just_begun_are_the_rest_of_its_question() -> None:
    """A turn ended too early ("Could you find me?" ... "a train to the coast"): its answer, barely
    heard, is thrown away, and the two utterances are one turn."""
    async with conversation() as (socket, stt, turns):
        stt.queue.put_nowait(started(1))
        stt.queue.put_nowait(final(1, "Could you find me?"))
        await settle()
        stt.queue.put_nowait(started(2))
        stt.queue.put_nowait({"type": "partial", "utterance": 2, "text": "a train to"})
        await settle()
        assert "interrupted" not in socket.types()  # held: it may be the rest of the question
        stt.queue.put_nowait(final(2, "a train to the coast?"))
        await settle()
        assert turns.prompts() == ["Could you find me?", "Could you find me? a train to the coast?"]
        assert turns.discarded == ["s"] and "interrupted" not in socket.types()
        (thrown,) = [e for e in socket.sent if e["type"] == "turn_discarded"]
        assert (thrown["prompt"], thrown["reason"], thrown["audio_chunks"]) == (
            "Could you find me?",
            "continued",
            1,
        )
        turns.stop.set()


async def test_without_backchannels_any_voice_interrupts_at_once() -> None:
    async with conversation(backchannels=None) as (socket, stt, _):
        await answering(stt)
        stt.queue.put_nowait(started(2))
        await settle()
        assert "interrupted" in socket.types()


async def test_a_turn_started_at_a_pause_is_taken_by_the_final_with_its_events_held_till_then() -> None:
    async with conversation() as (socket, stt, turns):
        stt.queue.put_nowait(started(1))
        stt.queue.put_nowait(pause(1, "Why is the sky blue?", 0.4, False))
        await settle()
        assert turns.prompts() == ["Why is the sky blue?"]  # started before the turn is certain
        assert "agent_start" not in socket.types()  # and nothing of it sent
        stt.queue.put_nowait(final(1, "why is the sky blue"))
        await settle()
        assert turns.prompts() == ["Why is the sky blue?"]  # taken, not started again
        types = socket.types()
        assert types.index("transcript") < types.index("agent_start") < types.index("audio_chunk")
        turns.stop.set()


async def test_a_turn_started_at_a_pause_the_user_talked_on_after_is_thrown_away() -> None:
    async with conversation() as (socket, stt, turns):
        stt.queue.put_nowait(started(1))
        stt.queue.put_nowait(pause(1, "Could you find me?", 0.9, False))
        await settle()
        stt.queue.put_nowait({"type": "speech_resumed", "utterance": 1})
        await settle()
        assert turns.discarded == ["s"]
        (thrown,) = [e for e in socket.sent if e["type"] == "turn_discarded"]
        assert (thrown["prompt"], thrown["reason"], thrown["audio_chunks"]) == (
            "Could you find me?",
            "went_on",
            1,
        )
        assert "agent_start" not in socket.types()
        stt.queue.put_nowait(final(1, "Could you find me a train to the coast?"))
        await settle()
        assert turns.prompts() == ["Could you find me?", "Could you find me a train to the coast?"]
        assert socket.types().count("agent_start") == 1
        turns.stop.set()


async def test_a_pause_whose_words_do_not_read_finished_starts_nothing() -> None:
    async with conversation() as (socket, stt, turns):
        stt.queue.put_nowait(started(1))
        stt.queue.put_nowait({**pause(1, "What is the", 0.96, False), "reads_finished": False})
        await settle()
        assert turns.prompts() == [] and "user_paused" in socket.types()


async def test_a_pause_that_does_not_lean_finished_starts_nothing() -> None:
    async with conversation(preempt=0.5) as (socket, stt, turns):
        stt.queue.put_nowait(started(1))
        stt.queue.put_nowait(pause(1, "My number is five five five", 0.3, False))
        await settle()
        assert turns.prompts() == [] and "user_paused" in socket.types()
