"""Turns through the whole app (agent.app over HTTP, in process), with a scripted model (the doubles'
`SignalWatchingAgent` as every session's Strands agent) and recorded speech (`RecordingTTSSession`):
one turn at a time per session until its speech has ended, `agent_end.audio_s` is the audio streamed,
and the text work of an adversarial answer never holds the event loop (`/ping`)."""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable

import httpx
import pytest

import agent.model
from agent.app import Speech, create_app
from agent.config import AgentConfig
from tests.agent.doubles import WORD_MS, RecordingTTSSession, SignalWatchingAgent

SESSION = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": "s" * 40}


class App:
    """The app with every session's agent built by `make_agent` and every turn's TTS session recorded
    in `sessions`; `invoke` posts a payload and returns the turn's events."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, make_agent: Callable[[], SignalWatchingAgent]
    ) -> None:
        self.sessions: list[RecordingTTSSession] = []
        self.agents: list[SignalWatchingAgent] = []

        def build_agent(config: AgentConfig, model: object) -> SignalWatchingAgent:
            self.agents.append(make_agent())
            return self.agents[-1]

        async def open_session(speech: Speech) -> RecordingTTSSession:
            self.sessions.append(RecordingTTSSession(chunk_delay_s=self.chunk_delay_s))
            return self.sessions[-1]

        self.chunk_delay_s = 0.0
        monkeypatch.setattr(agent.model, "build_agent", build_agent)
        monkeypatch.setattr(Speech, "open_session", open_session)
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(AgentConfig())), base_url="http://127.0.0.1:8080"
        )

    async def invoke(self, payload: dict) -> list[dict]:
        response = await self.client.post("/invocations", json=payload, headers=SESSION)
        assert response.status_code == 200
        return [json.loads(line[6:]) for line in response.text.split("\n\n") if line.startswith("data: ")]

    async def ping_s(self) -> float:
        started = time.perf_counter()
        assert (await self.client.get("/ping")).status_code == 200
        return time.perf_counter() - started


async def test_a_turn_whose_speech_still_streams_keeps_its_session_busy_and_an_interrupt_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model writes three six-word sentences at once; their 1.8 s of audio streams at 50 ms a
    chunk. Asked again while it speaks, the session refuses (`session_busy`) and nothing new runs; an
    interrupt then stops the turn that is speaking, whose `agent_end` counts the audio it streamed."""
    app = App(monkeypatch, lambda: SignalWatchingAgent(0.0, 3, "Sentence {} has six words here. ".format))
    app.chunk_delay_s = 0.05
    first = asyncio.create_task(app.invoke({"prompt": "Talk"}))
    # The doubles signal neither moment; they are polled (Strands polls its own cancel signal the same way).
    while not (app.agents and app.agents[0].finished.is_set() and app.sessions[0].chunks_sent >= 3):  # noqa: ASYNC110
        await asyncio.sleep(0.01)

    second = await app.invoke({"prompt": "And now?"})
    assert [e["type"] for e in second] == ["error", "agent_end"]
    assert second[0]["code"] == "session_busy" and second[1]["ok"] is False
    assert len(app.sessions) == 1 and app.agents[0].messages[-2]["content"][0]["text"] == "Talk"

    heard = await app.invoke({"interrupt": {"played_ms": 2 * WORD_MS - 50}})
    assert heard[0]["type"] == "interrupted" and heard[0]["heard"] == "Sentence 0 [interrupted]"
    events = await asyncio.wait_for(first, timeout=5)
    assert events[-1]["type"] == "agent_end" and events[-1]["interrupted"] is True
    streamed = sum(e["type"] == "audio_chunk" for e in events)
    assert 3 <= streamed < 18, "stopped mid-answer"
    assert events[-1]["audio_s"] == pytest.approx(streamed * WORD_MS / 1000)

    again = await app.invoke({"prompt": "Next"})  # the stopped turn has let go of the session
    assert again[-1]["ok"] is True and again[-1]["audio_s"] == pytest.approx(18 * WORD_MS / 1000)
    await app.client.aclose()


@pytest.mark.parametrize(
    ("mode", "character", "count"),
    [("bidi", "[", 20_000), ("batch", "`", 10_000)],
    ids=["bidi-brackets", "batch-backticks"],
)
async def test_an_adversarial_answer_never_holds_ping(
    monkeypatch: pytest.MonkeyPatch, mode: str, character: str, count: int
) -> None:
    """An answer of `count` copies of `character`, 100 a delta (speech text on it took 1.5 s here at
    main's cdb9822, all of it on the event loop). `/ping` is asked every 10 ms while the turn runs; the
    longest wait for an answer (from when it was due) stays within ten times its idle latency plus 20
    of the interpreter's thread switch intervals (the worker thread doing the text work holds the GIL
    for up to one interval at a time). The test run's own heap is frozen out of the garbage collector
    while it measures: in the whole suite (torch, the model stacks and 1,700 tests' modules loaded) one
    full collection held the loop 355 ms in CI, at a point where this turn's text work holds it 1 ms."""
    gc.collect()
    gc.freeze()
    try:
        await _ping_while_an_answer_runs(monkeypatch, mode, character, count)
    finally:
        gc.unfreeze()


async def _ping_while_an_answer_runs(
    monkeypatch: pytest.MonkeyPatch, mode: str, character: str, count: int
) -> None:
    app = App(monkeypatch, lambda: SignalWatchingAgent(0.0, count // 100, lambda _: character * 100))
    await app.invoke({"interrupt": {"played_ms": 0}})  # builds the session's agent and warms the path
    idle_s = statistics.median([await app.ping_s() for _ in range(20)])

    turn = asyncio.create_task(app.invoke({"prompt": "Say it", "mode": mode}))
    waits = []
    while not turn.done():
        due = time.perf_counter() + 0.01
        await asyncio.sleep(0.01)
        await app.ping_s()
        waits.append(time.perf_counter() - due)
    events = turn.result()
    assert events[-1]["type"] == "agent_end" and events[-1]["text"] == character * count
    bound_s = 10 * idle_s + 20 * sys.getswitchinterval()
    assert max(waits) < bound_s, f"/ping waited {max(waits):.3f} s (idle {idle_s * 1000:.1f} ms)"
    await app.client.aclose()


async def test_a_slow_models_long_first_sentence_is_spoken_after_five_words_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agent's defaults (AgentConfig(), what `AGENT_FIRST_FRAGMENT_MAX_WORDS` unset gives): a model
    writing one 31-word sentence a word every 20 ms has its first 5 words sent to speech as the first
    chunk, the rest of the sentence after (8 until the first audio was brought to the user's last word:
    agent/config.py says why 5). Guards the default by what it does: switched off, the first chunk would
    be the whole sentence, 0.6 s of writing later."""
    words = [f"word{n}" for n in range(30)]
    writes = lambda n: f"{words[n]} " if n < 30 else "end."  # noqa: E731
    app = App(monkeypatch, lambda: SignalWatchingAgent(0.02, 31, writes))
    events = await app.invoke({"prompt": "Talk for a while"})
    (session,) = app.sessions
    assert [text.split() for _, text in session.sent] == [words[:5], [*words[5:], "end."]], session.sent
    assert events[-1]["ok"] is True
