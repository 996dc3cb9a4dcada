"""The agent's two main claims, checked where they could break: bidi speaks the first sentence while
the model is still writing, and the agent's cancel stops the container computing the rest of the turn
(checked at the container's own frames: nothing of the turn starts after its `cancelled`).

The real Kokoro container runs behind the emulator's bidirectional stream; the model is the paced
script model, slowed down so the timing is controlled (its last delta comes seconds after the first
sentence is complete), not a matter of how busy the machine is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from agent.endpoint_stream import Audio, Control
from agent.modes import Turn, run_bidi
from agent.tts_session import TTSSession
from emulator.llm.base import ConverseRequest
from emulator.llm.script import PacedScriptModel
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import bidi_client, fast_config
from tests.reliability.emulator_support import say

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

ENDPOINT = "kokoro-82m"
SENTENCES = [
    "Thanks for waiting, I found your order and everything about it looks fine to me.",
    "It shipped yesterday from our Denver warehouse and should arrive on Thursday afternoon.",
    "If you need it sooner, I can upgrade the shipping to overnight delivery at no cost.",
    "Would you like me to do that now, or is there anything else I can help you with today?",
]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    # The default grace after end of input (5 s): a container that ignores the turn's end keeps
    # computing that long, which is what the barge-in test must be able to see.
    config = fast_config(
        tmp_path_factory.mktemp("emulator"), startup_timeout_s=240.0, end_of_input_grace_s=5.0
    )
    with emulator_in_thread(config, load_manifest(DEFAULT_MANIFEST)) as running:
        yield running


def _paced_text(tokens_per_s: float, reply: str = " ".join(SENTENCES)):
    model = PacedScriptModel(first_token_ms=0, tokens_per_s=tokens_per_s, script=reply)

    def source(prompt: str) -> AsyncIterator[str]:
        return model.stream(ConverseRequest("paced", [{"role": "user", "content": [{"text": prompt}]}]))

    return source


@pytest.mark.timeout(180)
async def test_first_sentence_is_sent_and_heard_before_the_model_finishes(emu: Emulator) -> None:
    client = await bidi_client(emu)
    sent: list[float] = []

    async def open_session() -> TTSSession:
        session = await TTSSession.open(client, ENDPOINT)
        synthesize = session.synthesize

        async def recording(*args, **kwargs) -> None:
            sent.append(time.monotonic())
            await synthesize(*args, **kwargs)

        session.synthesize = recording  # type: ignore[method-assign]
        return session

    turn = Turn(prompt="Where is my order?", first_fragment_min_words=3)
    deltas: list[float] = []
    audio: list[float] = []
    # 12 tokens/s: the model writes for about 6 s, where the first audio came at 0.64 s (1.05 s with 0.7
    # of a 2-core machine's CPU)
    async with asyncio.timeout(150):
        async for event in run_bidi(turn, _paced_text(tokens_per_s=12), open_session):
            now = time.monotonic()
            if event["type"] == "text_delta":
                deltas.append(now)
            elif event["type"] == "audio_chunk":
                audio.append(now)
            elif event["type"] == "error":
                pytest.fail(f"the turn failed: {event}")
    first_sent, first_audio, last_delta = sent[0] - deltas[0], audio[0] - deltas[0], deltas[-1] - deltas[0]
    say(
        "bidi turn, model at 12 tokens/s",
        f"first sentence sent at {first_sent:.2f} s, first audio at {first_audio:.2f} s, "
        f"last text delta at {last_delta:.2f} s ({len(sent)} sentences)",
    )
    assert len(sent) >= 4
    assert first_sent < last_delta, "the first sentence waited for the whole answer"
    assert first_audio < last_delta, "the first sentence's audio arrived only after the model finished"


async def _read_until_audio(chunks: AsyncIterator[Audio | Control], log: list[Audio | Control]) -> None:
    async for chunk in chunks:
        log.append(chunk)
        if isinstance(chunk, Audio):
            return


@pytest.mark.timeout(180)
async def test_cancel_stops_every_queued_request_of_the_session(emu: Emulator) -> None:
    """TTSSession.cancel reaches the container: nothing of the turn starts after its `cancelled`."""
    client = await bidi_client(emu)
    session = await TTSSession.open(client, ENDPOINT)
    log: list[Audio | Control] = []
    async with asyncio.timeout(150), session:
        for index, sentence in enumerate(SENTENCES):
            await session.synthesize(sentence, f"s{index}", "jm_kumo", "pcm")
        chunks = session.chunks()
        await _read_until_audio(chunks, log)
        await session.cancel()
        await session.finish()
        async for chunk in chunks:
            log.append(chunk)
    acks = [i for i, c in enumerate(log) if isinstance(c, Control) and c.type == "cancelled"]
    assert acks, "the container never acknowledged the cancel"
    after = log[acks[0] + 1 :]
    started_after = [
        c.message["request_id"] for c in after if isinstance(c, Control) and c.type == "synthesis_start"
    ]
    cancelled = log[acks[0]].message["request_ids"]
    completed = [
        c.message["request_id"] for c in log if isinstance(c, Control) and c.type == "synthesis_complete"
    ]
    say(
        "4 sentences, cancel after the first audio frame",
        f"cancelled {cancelled}, started after the cancel {started_after}, completed {completed}",
    )
    assert started_after == [], "requests queued before the cancel were started after it"
    assert {"s1", "s2", "s3"} <= set(cancelled)
    assert not {"s1", "s2", "s3"} & set(completed)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_four_concurrent_real_model_sessions_all_complete(emu: Emulator) -> None:
    client = await bidi_client(emu)

    async def one(index: int) -> tuple[list[str], int]:
        completed, audio = [], 0
        async with await TTSSession.open(client, ENDPOINT) as session:
            for n, sentence in enumerate(SENTENCES[index % 2 :][:2]):
                await session.synthesize(sentence, f"c{index}-{n}", "jm_kumo", "pcm")
            await session.finish()
            async for chunk in session.chunks():
                if isinstance(chunk, Audio):
                    audio += len(chunk.data)
                elif chunk.type == "synthesis_complete":
                    completed.append(chunk.message["request_id"])
                elif chunk.type == "error":
                    pytest.fail(f"session {index}: {chunk.message}")
        return completed, audio

    started = time.monotonic()
    async with asyncio.timeout(540):
        results = await asyncio.gather(*(one(i) for i in range(4)))
    say(
        "4 concurrent sessions, 2 sentences each, real Kokoro",
        f"completed {[len(c) for c, _ in results]} in {time.monotonic() - started:.1f} s, "
        f"audio {[round(a / 48_000, 1) for _, a in results]} s",
    )
    for index, (completed, audio) in enumerate(results):
        assert completed == [f"c{index}-0", f"c{index}-1"]
        assert audio > 48_000  # more than a second of speech
