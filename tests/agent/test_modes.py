"""The two modes' event order, with test doubles for the model and the TTS session
(tests/agent/doubles.py): bidi speaks each sentence as soon as it exists, and a turn that fails still
ends with its `error` and `agent_end` and nothing after them."""

from __future__ import annotations

import pytest

from agent.events import TurnError
from agent.modes import Turn, run_batch, run_bidi
from tests.agent.doubles import FailingModel, LateLastDeltaModel, RecordingTTSSession, unanswered_tts_session
from tests.tts.text.test_speech_text import CASES as SPEECH_TEXT_CASES
from tts.text.speech_text import speech_text

ANSWER = ["Hello there. ", "The sky is blue", " today. ", "It will rain", " tomorrow."]
LAST_DELAY_S = 0.3


async def test_bidi_sends_each_sentence_before_the_model_has_finished() -> None:
    model, session = LateLastDeltaModel(ANSWER, LAST_DELAY_S), RecordingTTSSession()

    async def open_session() -> RecordingTTSSession:
        return session

    events = [e async for e in run_bidi(Turn("Weather?", first_fragment_min_words=None), model, open_session)]
    assert [text for _, text in session.sent] == [
        "Hello there.",
        "The sky is blue today.",
        "It will rain tomorrow.",
    ]
    assert model.ended_at is not None
    # The two sentences complete before the late last delta were spoken while the model was still
    # writing, not after its answer ended.
    assert all(at < model.ended_at - LAST_DELAY_S / 2 for at, _ in session.sent[:2])
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and events[-1]["ok"] is True
    first_audio = kinds.index("audio_chunk")
    last_text = max(i for i, kind in enumerate(kinds) if kind == "text_delta")
    assert first_audio < last_text  # audio of the first sentence arrives before the answer's end


async def test_a_turn_waiting_for_a_slot_relays_its_place_then_speaks() -> None:
    """A full replica tells the session it waits (`queued`, its place in line): the turn passes each
    place on, then its audio, and ends ok."""
    model, session = LateLastDeltaModel(ANSWER, 0.0), RecordingTTSSession(queued=2)

    async def open_session() -> RecordingTTSSession:
        return session

    events = [e async for e in run_bidi(Turn("Weather?", first_fragment_min_words=None), model, open_session)]
    kinds = [e["type"] for e in events]
    places = [e["position"] for e in events if e["type"] == "queued"]
    assert places == [2, 1]
    assert kinds.index("queued") < kinds.index("audio_chunk") and events[-1]["ok"] is True


async def test_batch_sends_the_whole_answer_once_it_is_complete() -> None:
    model, session = LateLastDeltaModel(ANSWER, LAST_DELAY_S), RecordingTTSSession()

    async def open_session() -> RecordingTTSSession:
        return session

    [e async for e in run_batch(Turn("Weather?", mode="batch"), model, open_session)]
    assert len(session.sent) == 1 and model.ended_at is not None and session.sent[0][0] >= model.ended_at


async def test_a_turn_refused_at_once_ends_cleanly_after_its_typed_error() -> None:
    """The second of two concurrent turns on one session is refused before the endpoint has answered
    its TTS session; closing that session must not break the response after `agent_end`."""
    model = FailingModel(TurnError("session_busy", "this session is already answering a turn"))

    async def open_session():
        return unanswered_tts_session()

    events = [e async for e in run_bidi(Turn("Hi"), model, open_session)]
    assert [e["type"] for e in events] == ["agent_start", "error", "agent_end"]
    assert events[1]["code"] == "session_busy" and events[2]["ok"] is False


def _in_fragments(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if size else [text]


@pytest.mark.parametrize(("written", "heard"), SPEECH_TEXT_CASES, ids=[w[:40] for w, _ in SPEECH_TEXT_CASES])
@pytest.mark.parametrize("fragment", [0, 1, 3])
async def test_bidi_speaks_the_speech_text_of_what_the_model_writes(written: str, heard: str, fragment: int):
    """The speech text table at the agent: however the model's stream is split, what reaches the
    container reads, once it is speech text, as the whole answer's speech text, and a chunk with nothing
    to say aloud (a code block's lines, a line of emoji) is never sent."""
    model, session = LateLastDeltaModel(_in_fragments(written, fragment), 0.0), RecordingTTSSession()

    async def open_session() -> RecordingTTSSession:
        return session

    [e async for e in run_bidi(Turn("Format?"), model, open_session)]
    spoken = [speech_text(text) for _, text in session.sent]
    assert all(spoken), f"sent a chunk with nothing to say: {session.sent}"
    assert " ".join(spoken) == " ".join(heard.splitlines())
