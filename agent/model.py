"""The language model side of a turn: a Strands agent on Amazon Bedrock, streaming text deltas.

`BedrockModel` talks to Bedrock Runtime through boto3, which takes its endpoint from
`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` when set: that is how the same code reaches the emulator locally.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from strands import Agent
from strands.models.bedrock import BedrockModel
from strands.types.exceptions import ConcurrencyException

from agent.config import AgentConfig
from agent.events import TurnError

MAX_CONVERSATIONS = 256
RELEASE_WAIT_S = 2.0
"""How long a turn waits for its session's abandoned previous answer to let go of the agent. Strands
stops it at the model's next chunk (one token: 0.05-0.3 s from the local model), and the client that
abandoned a turn often asks the next question at once (barge-in)."""


class SessionBusy(TurnError):
    def __init__(self) -> None:
        super().__init__(
            "session_busy",
            "this session is already answering a turn: one turn at a time per session",
        )


class _Answer:
    """One answer being generated: its task, and the signal that stops it (set once nobody reads it)."""

    def __init__(self, task: asyncio.Task[None], stop: threading.Event) -> None:
        self.task = task
        self.stop = stop


_ANSWERS: dict[Agent, _Answer] = {}
"""The answer each agent is generating (a strong reference: an abandoned one runs on until it stops)."""
_END = object()


def build_model(config: AgentConfig) -> BedrockModel:
    return BedrockModel(model_id=config.bedrock_model_id, region_name=config.region, streaming=True)


def build_agent(config: AgentConfig, model: BedrockModel) -> Agent:
    return Agent(model=model, system_prompt=config.system_prompt, callback_handler=None)


def answering(agent: Agent) -> bool:
    """Whether `agent` is generating an answer someone still reads."""
    answer = _ANSWERS.get(agent)
    return answer is not None and not answer.task.done() and not answer.stop.is_set()


async def text_deltas(agent: Agent, prompt: str) -> AsyncIterator[str]:
    """The speakable text of the answer as it streams: text deltas, without reasoning or citations.

    The agent runs in a task of its own and hands its deltas over through a queue. A consumer that
    stops early (its client went away, the turn failed) sets Strands' `cancel_signal`, and Strands
    closes the Bedrock stream at the model's next chunk. Tearing the agent's generator down instead
    would not stop the model: Strands reads the stream in a worker thread that looks only at that
    signal, and it would read the rest of the answer for nobody (about 9 s of the local model's time,
    which every other session waits behind).

    One answer at a time per agent: an abandoned one is waited for (up to RELEASE_WAIT_S), a live one
    makes this raise `SessionBusy`.
    """
    previous = _ANSWERS.get(agent)
    if previous is not None:
        if previous.stop.is_set():
            await asyncio.wait({previous.task}, timeout=RELEASE_WAIT_S)
        if not previous.task.done():
            raise SessionBusy()
    stop = threading.Event()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    answer = _Answer(asyncio.create_task(_answer(agent, prompt, stop, queue.put_nowait)), stop)
    _ANSWERS[agent] = answer

    def forget(_: asyncio.Task[None]) -> None:
        if _ANSWERS.get(agent) is answer:
            del _ANSWERS[agent]

    answer.task.add_done_callback(forget)
    try:
        while (item := await queue.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()  # no effect on an answer that is complete


async def _answer(agent: Agent, prompt: str, stop: threading.Event, put: Callable[[Any], None]) -> None:
    try:
        async for event in agent.stream_async(prompt, cancel_signal=stop):
            data = event.get("data")
            if isinstance(data, str) and data and not event.get("reasoning") and "citation" not in event:
                put(data)
    except ConcurrencyException:
        put(SessionBusy())
    except Exception as exc:
        put(exc)
    finally:
        put(_END)


class Conversations:
    """One Strands agent (and so one conversation history) per AgentCore session, least recently used
    evicted first, so a long-running runtime does not grow without bound. All of them share one
    `BedrockModel` (one boto3 client), so a turn does not pay for building a client."""

    def __init__(self, config: AgentConfig, limit: int = MAX_CONVERSATIONS) -> None:
        self._config = config
        self._model = build_model(config)
        self._limit = limit
        self._agents: OrderedDict[str, Agent] = OrderedDict()

    def for_session(self, session_id: str | None) -> Agent:
        if session_id is None:
            return build_agent(self._config, self._model)
        agent = self._agents.pop(session_id, None) or build_agent(self._config, self._model)
        self._agents[session_id] = agent
        while len(self._agents) > self._limit:
            self._agents.popitem(last=False)
        return agent
