"""Captions and barge-in through the whole local stack (the real Kokoro container's word timings, the
emulated Bedrock's paced script model, the agent as its AgentCore runtime replica), driven over HTTP
as the web page drives it: the listener interrupts mid-answer with how much it played, asks again on the
same session, and the next model request (the emulated Bedrock's record) carries the turn as heard."""

import asyncio
import itertools
import threading
import time

import httpx
import pytest

from agent.barge_in import INTERRUPTED_MARK
from agent.config import AgentConfig
from agent.model import build_agent, build_model, text_deltas
from tests.emulator.services.bedrock.test_runtime import bedrock_app, llm_config, serving
from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
FIRST, SECOND = "Where is my order?", "Sorry, what was that?"
HEARD_WORDS = 5


def _events(stack, payload: dict, session: str, seen: list | None = None) -> list[dict]:
    """The turn's events; each is also appended to `seen` with its arrival time as it comes."""
    parser, events = SSEParser(), []
    headers = {SESSION_HEADER: session}
    with httpx.stream(
        "POST", f"{stack.agent_url}/invocations", json=payload, headers=headers, timeout=120
    ) as response:
        assert response.status_code == 200
        for raw in response.iter_raw():
            for event in parser.feed(raw):
                events.append(event)
                if seen is not None:
                    seen.append((time.perf_counter(), event))
    return events


def _recorded_requests(stack) -> list[dict]:
    url = stack.env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
    return httpx.get(f"{url}/_emulator/bedrock/requests", timeout=10, trust_env=False).json()


def _words(events) -> list[dict]:
    return [w for e in events if e["type"] == "words" for w in e["words"]]


def test_words_are_captions_on_the_turns_audio_timeline(stack):
    events = _events(stack, {"prompt": FIRST}, "captions-" + "c" * 30)
    words = _words(events)
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert [w["text"] for w in words] == text.split(), "every written word, as written, in order"
    starts = [w["start_ms"] for w in words]
    assert starts == sorted(starts) and all(w["end_ms"] > w["start_ms"] for w in words)
    audio_ms = events[-1]["audio_s"] * 1000
    assert words[-1]["end_ms"] <= audio_ms + 1 and words[-1]["end_ms"] > audio_ms - 1500
    kinds = [e["type"] for e in events]
    assert kinds.index("words") < kinds.index("audio_chunk"), "a word's timing comes before its audio"


def test_an_interrupted_turn_reaches_the_next_model_request_as_heard(stack):
    session = "barge-in-" + "b" * 30
    seen: list = []
    first = threading.Thread(target=_events, args=(stack, {"prompt": FIRST}, session, seen))
    first.start()
    deadline = time.monotonic() + 90
    while len(_words(e for _, e in list(seen))) <= HEARD_WORDS:
        assert time.monotonic() < deadline and first.is_alive(), "no word timings arrived"
        time.sleep(0.02)
    words = _words(e for _, e in list(seen))
    played_ms = words[HEARD_WORDS - 1]["start_ms"] + 1  # the listener heard the first five words start
    interrupted_at = time.perf_counter()
    second = _events(stack, {"prompt": SECOND, "interrupt": {"played_ms": played_ms}}, session)
    first.join(30)
    assert not first.is_alive(), "the interrupted turn's response ended"

    heard = " ".join([*(w["text"] for w in words[:HEARD_WORDS]), INTERRUPTED_MARK])
    assert second[0]["type"] == "interrupted" and second[0]["heard"] == heard
    assert second[1]["type"] == "agent_start" and second[-1]["type"] == "agent_end" and second[-1]["ok"]
    end = seen[-1][1]
    assert end["type"] == "agent_end" and end["interrupted"] is True
    last_audio = max(at for at, e in seen if e["type"] == "audio_chunk")
    assert last_audio - interrupted_at < 1.0, "the interrupted turn stopped sending audio"

    requests = _recorded_requests(stack)
    assert requests[-1]["messages"][-3:] == [
        {"role": "user", "content": [{"text": FIRST}]},
        {"role": "assistant", "content": [{"text": heard}]},
        {"role": "user", "content": [{"text": SECOND}]},
    ]
    assert requests[-2]["ended"] is not None, "the interrupted turn's model request has ended"


@pytest.mark.parametrize("after_s", [0.0, 0.3, None], ids=["at-once", "before-audio", "after-the-turn"])
def test_an_interrupt_at_any_moment_leaves_a_conversation_the_model_accepts(stack, after_s):
    """At once (the turn may not have reached the model), before any audio, or after the turn has
    ended (the listener still playing it): the next turn runs, and its model request alternates
    user/assistant with no blank turn (what Bedrock refuses)."""
    session = f"moment-{after_s}-" + "m" * 30
    if after_s is None:
        _events(stack, {"prompt": FIRST}, session)
    else:
        first = threading.Thread(target=_events, args=(stack, {"prompt": FIRST}, session))
        first.start()
        time.sleep(after_s)
    second = _events(stack, {"prompt": SECOND, "interrupt": {"played_ms": 0}}, session)
    if after_s is not None:
        first.join(30)
    assert second[0]["type"] == "interrupted"
    assert second[-1]["type"] == "agent_end" and second[-1]["ok"] is True, second[-3:]
    messages = _recorded_requests(stack)[-1]["messages"]
    assert messages[-1] == {"role": "user", "content": [{"text": SECOND}]}
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    assert all(block["text"].strip() for m in messages for block in m["content"])


async def test_a_stopped_answer_ends_the_model_stream_within_a_few_tokens(monkeypatch):
    """The agent's model (Strands' BedrockModel, as agent.model builds it) against the emulated Bedrock
    writing 8 tokens/s: once the answer's reader goes away, the reply stream ends within a few tokens
    (the emulated Bedrock's record), not after the 48 of the whole reply."""
    with serving(bedrock_app(llm_config(llm_first_token_ms=100, llm_tokens_per_s=8.0))) as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-secret")
        config = AgentConfig()
        agent = build_agent(config, build_model(config))
        deltas = text_deltas(agent, FIRST)
        for _ in range(3):
            await anext(deltas)
        await deltas.aclose()
        deadline = time.monotonic() + 5
        async with httpx.AsyncClient(base_url=url) as emulator:
            while (record := (await emulator.get("/_emulator/bedrock/requests")).json()[-1])["ended"] is None:
                assert time.monotonic() < deadline, "the model's stream is still open 5 s after the stop"
                await asyncio.sleep(0.05)
        assert record["output_tokens"] <= 6
