"""Captions and barge-in at the agent (agent.barge_in, agent.modes, agent.model.Conversation,
agent.app's payload), with the test doubles of tests/agent/doubles.py: the container's word timings are
relayed on the turn's audio timeline, and an interrupt stops the turn and records what was heard."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agent.app import create_app
from agent.barge_in import INTERRUPTED_MARK, AudioTimeline, SpokenTurn, parse_words
from agent.config import AgentConfig
from agent.events import Word
from agent.model import Conversation, text_deltas
from agent.modes import Turn, run_batch, run_bidi
from tests.agent.doubles import WORD_MS, LateLastDeltaModel, RecordingTTSSession, SignalWatchingAgent

ANSWER = ["Hello there. ", "The sky is blue today. ", "It will rain tomorrow."]


async def _turn(run, session: RecordingTTSSession, turn: Turn, spoken: SpokenTurn | None = None):
    async def open_session() -> RecordingTTSSession:
        return session

    return [e async for e in run(turn, LateLastDeltaModel(ANSWER, 0.0), open_session, spoken)]


@pytest.mark.parametrize("audio_format", ["pcm", "opus"])
async def test_words_are_relayed_on_the_turns_audio_timeline(audio_format: str) -> None:
    """PCM is timed by its bytes, a codec by `synthesis_complete.duration_s`: either way sentence 2's
    words start where sentence 1's audio ends."""
    session, spoken = RecordingTTSSession(), SpokenTurn()
    turn = Turn("Weather?", audio_format=audio_format, first_fragment_min_words=None)
    events = await _turn(run_bidi, session, turn, spoken)
    relayed = [w for e in events if e["type"] == "words" for w in e["words"]]
    written = " ".join(text for _, text in session.sent).split()
    assert [w["text"] for w in relayed] == written
    assert [w["start_ms"] for w in relayed] == [i * WORD_MS for i in range(len(written))]
    assert [e["seq"] for e in events if e["type"] == "words"] == [0, 1, 2]
    assert spoken.words == [Word(w["text"], w["start_ms"], w["end_ms"]) for w in relayed]
    assert spoken.complete and events[-1]["interrupted"] is False


async def test_each_words_event_comes_before_the_audio_it_describes() -> None:
    events = await _turn(run_bidi, RecordingTTSSession(), Turn("Weather?", first_fragment_min_words=None))
    for sentence, words_at in enumerate(i for i, e in enumerate(events) if e["type"] == "words"):
        first_audio = next(
            i for i, e in enumerate(events) if e["type"] == "audio_chunk" and e["sentence"] == sentence
        )
        assert words_at < first_audio


async def test_a_container_without_word_timings_still_speaks() -> None:
    events = await _turn(run_batch, RecordingTTSSession(words=False), Turn("Weather?", mode="batch"))
    kinds = [e["type"] for e in events]
    assert "words" not in kinds and "audio_chunk" in kinds and events[-1]["ok"] is True


def test_the_timeline_counts_pcm_by_its_bytes_exactly() -> None:
    timeline = AudioTimeline(pcm=True)
    timeline.request_started("s0")
    timeline.audio(b"\0" * 2 * 12_345)  # 514.375 ms at 24 kHz: no rounding to whole ms on the way
    timeline.request_started("s1")
    assert timeline.on_turn("s1", [Word("Hi", 10.0, 250.05)]) == [Word("Hi", 524.4, 764.4)]


def test_a_malformed_words_frame_costs_only_its_bad_entries() -> None:
    entries = [
        {"text": "ok", "start_ms": 0, "end_ms": 90.5},
        {"text": 3, "start_ms": 0, "end_ms": 1},
        {"text": "nan", "start_ms": float("nan"), "end_ms": 1},
        {"text": "bool", "start_ms": True, "end_ms": 1},
        {"text": "missing"},
        "word",
        None,
    ]
    assert parse_words(entries) == [Word("ok", 0.0, 90.5)]
    assert parse_words({"text": "not a list"}) == [] and parse_words(None) == []


WORDS = [Word("It", 0, 80), Word("is", 100, 180), Word("**very**", 200, 380), Word("late.", 400, 600)]


@pytest.mark.parametrize(
    ("played_ms", "complete", "record"),
    [
        (0, False, INTERRUPTED_MARK),
        (100, False, f"It {INTERRUPTED_MARK}"),  # "is" starts at 100: not heard yet
        (100.1, False, f"It is {INTERRUPTED_MARK}"),
        (250, True, f"It is **very** {INTERRUPTED_MARK}"),  # the words as written
        (600, False, f"It is **very** late. {INTERRUPTED_MARK}"),  # all played, but the model was cut
        (599, True, f"It is **very** late. {INTERRUPTED_MARK}"),  # the last word was cut
        (600, True, None),  # heard to the end: nothing to change
    ],
)
def test_the_record_is_the_words_that_started_before_played_ms(played_ms, complete, record) -> None:
    spoken = SpokenTurn()
    spoken.words, spoken.complete = list(WORDS), complete
    assert spoken.heard_record(played_ms) == record


async def test_an_interrupt_mid_answer_stops_speech_model_and_records_what_was_heard() -> None:
    """A paced answer of two-word sentences; the listener interrupts after 250 ms of audio: no audio
    after the interrupt, the TTS session released, the model stopped within a delta, and the history
    ends with the three words that had started, marked."""
    agent = SignalWatchingAgent(interval_s=0.02, delta="Sentence {}. ".format)
    conversation = Conversation(agent)  # type: ignore[arg-type]
    session = RecordingTTSSession(chunk_delay_s=0.02)
    spoken = conversation.start_turn()

    async def open_session() -> RecordingTTSSession:
        return session

    events = []
    interrupting: asyncio.Task[str | None] | None = None
    async for event in run_bidi(
        Turn("Talk", first_fragment_min_words=None), lambda p: text_deltas(agent, p), open_session, spoken
    ):
        events.append(event)
        if event["type"] == "audio_chunk" and event["seq"] == 3 and interrupting is None:
            interrupting = asyncio.create_task(conversation.interrupt(played_ms=250))
    spoken.ended.set()
    assert interrupting is not None
    record = await interrupting
    assert record == f"Sentence 0. Sentence {INTERRUPTED_MARK}"
    assert events[-1]["type"] == "agent_end" and events[-1]["interrupted"] is True
    assert sum(e["type"] == "audio_chunk" for e in events) <= 5  # not the hundreds of the whole answer
    assert session.closed
    await asyncio.wait_for(agent.finished.wait(), timeout=1.0)
    assert agent.produced < 50
    assert agent.messages == [
        {"role": "user", "content": [{"text": "Talk"}]},
        {"role": "assistant", "content": [{"text": record}]},
    ]
    assert await conversation.interrupt(played_ms=900) is None, "a second interrupt changes nothing"


async def test_an_interrupt_after_the_turn_replaces_its_whole_answer() -> None:
    agent = SignalWatchingAgent(interval_s=0.0, deltas=3, delta="Sentence {}. ".format)
    conversation = Conversation(agent)  # type: ignore[arg-type]
    agent.messages += [
        {"role": "user", "content": [{"text": "earlier"}]},
        {"role": "assistant", "content": [{"text": "kept"}]},
    ]
    spoken = conversation.start_turn()

    async def open_session() -> RecordingTTSSession:
        return RecordingTTSSession()

    turn = Turn("Talk", first_fragment_min_words=None)
    [e async for e in run_bidi(turn, lambda p: text_deltas(agent, p), open_session, spoken)]
    spoken.ended.set()
    assert agent.messages[-1]["content"][0]["text"] == "Sentence 0. Sentence 1. Sentence 2. "
    assert await conversation.interrupt(played_ms=350) == f"Sentence 0. Sentence 1. {INTERRUPTED_MARK}"
    assert agent.messages[1]["content"][0]["text"] == "kept"
    assert agent.messages[-1] == {
        "role": "assistant",
        "content": [{"text": f"Sentence 0. Sentence 1. {INTERRUPTED_MARK}"}],
    }


async def test_a_turn_interrupted_before_it_reached_the_model_leaves_the_history_alone() -> None:
    agent = SignalWatchingAgent()
    agent.messages += [
        {"role": "user", "content": [{"text": "earlier"}]},
        {"role": "assistant", "content": [{"text": "kept"}]},
    ]
    conversation = Conversation(agent)  # type: ignore[arg-type]
    conversation.start_turn().ended.set()
    assert await conversation.interrupt(played_ms=0) == INTERRUPTED_MARK
    assert agent.messages[-1]["content"][0]["text"] == "kept"


async def _invoke(app, payload) -> list[dict]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        response = await client.post(
            "/invocations",
            json=payload,
            headers={"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": "s" * 40},
        )
    assert response.status_code == 200
    return [json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: ")]


@pytest.mark.parametrize(
    "interrupt",
    [None, 3, [], {}, {"played_ms": "3"}, {"played_ms": True}, {"played_ms": -1}, {"played_ms": 1e300}],
)
async def test_a_malformed_interrupt_is_a_typed_error_and_nothing_runs(interrupt) -> None:
    events = await _invoke(create_app(AgentConfig()), {"prompt": "Hi", "interrupt": interrupt})
    assert [e["type"] for e in events] == ["error", "agent_end"]
    assert events[0]["code"] == "invalid_interrupt" and events[1]["ok"] is False


async def test_an_interrupt_alone_answers_what_was_heard() -> None:
    """No turn has run on this session: nothing to interrupt, and no turn starts."""
    events = await _invoke(create_app(AgentConfig()), {"interrupt": {"played_ms": 1200}})
    assert [e["type"] for e in events] == ["interrupted", "agent_end"]
    assert events[0]["played_ms"] == 1200 and events[0]["heard"] is None and events[1]["ok"] is True
