"""The language model side of a turn: a Strands agent on Amazon Bedrock, streaming text deltas.

`BedrockModel` talks to Bedrock Runtime through boto3, which takes its endpoint from
`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` when set: that is how the same code reaches the emulator locally.

The conversation history is the Strands agent's `messages`, one agent per AgentCore session
(`Conversations`); every model request carries it. Barge-in rewrites its last assistant turn to what the
listener heard (`Conversation.interrupt`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from strands import Agent
from strands.models.bedrock import BedrockModel
from strands.types.exceptions import ConcurrencyException

from agent.barge_in import SpokenTurn
from agent.config import AgentConfig
from agent.events import TurnError

MAX_CONVERSATIONS = 256
RELEASE_WAIT_S = 15.0
"""How long a turn waits for its session's stopped previous answer to let go of the agent. Strands
stops it at the model's next chunk (one token: 0.05-0.3 s from the local model on an idle machine), and
the client that abandoned a turn often asks the next question at once (barge-in). A stopped answer
always ends, so this bounds only a model that hangs: on a loaded 2-core machine the stop of a turn
still opening its speech session took over 2 s (the limit this replaced), and the barge-in was
refused as `session_busy`."""


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


LATCH_POLL_S = 0.02


class StoppableBedrockModel(BedrockModel):
    """`BedrockModel` whose stopped stream really ends. Strands (1.62) hands the worker thread that reads
    Bedrock's stream the agent's cancel signal and detaches the thread; the agent clears that signal as
    soon as the invocation returns "cancelled", so the thread, which looks at it only at the next chunk,
    sees it clear and reads the rest of the reply for nobody (measured through the emulated Bedrock's
    request record: all 48 tokens of the paced script, 5.6 s after the stop). Here the worker gets a
    signal of its own, set when the agent's is and whenever this stream ends, and never cleared."""

    async def stream(self, *args: Any, cancel_signal: threading.Event | None = None, **kwargs: Any) -> Any:
        latched = threading.Event()

        async def latch() -> None:
            # A threading.Event has no async wait (Strands polls its own the same way, every 50 ms).
            while cancel_signal is not None and not cancel_signal.is_set():  # noqa: ASYNC110
                await asyncio.sleep(LATCH_POLL_S)
            latched.set()

        watcher = asyncio.ensure_future(latch()) if cancel_signal is not None else None
        try:
            async for event in super().stream(*args, cancel_signal=latched, **kwargs):
                yield event
        finally:
            latched.set()  # complete, failed or abandoned: nobody reads what the thread would read next
            if watcher is not None:
                watcher.cancel()


def build_model(config: AgentConfig) -> BedrockModel:
    return StoppableBedrockModel(model_id=config.bedrock_model_id, region_name=config.region, streaming=True)


def build_agent(config: AgentConfig, model: BedrockModel) -> Agent:
    return Agent(model=model, system_prompt=config.system_prompt, callback_handler=None)


def answering(agent: Agent) -> bool:
    """Whether `agent` is generating an answer someone still reads."""
    answer = _ANSWERS.get(agent)
    return answer is not None and not answer.task.done() and not answer.stop.is_set()


async def text_deltas(agent: Agent, prompt: str) -> AsyncIterator[str]:
    """The speakable text of the answer as it streams: text deltas, without reasoning or citations.

    The agent runs in a task of its own and hands its deltas over through a queue. A consumer that
    stops early (its client went away, the turn failed, barge-in) sets Strands' `cancel_signal`, and
    the Bedrock stream closes at the model's next chunk (with `StoppableBedrockModel`). Tearing the
    agent's generator down instead would not stop the model: Strands reads the stream in a worker
    thread that looks only at that signal, and it would read the rest of the answer for nobody (about
    9 s of the local model's time, which every other session waits behind).

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


def _after_answer(agent: Agent, action: Callable[[], None]) -> None:
    """Run `action` once `agent` has no answer running: at once, or when the answer (stopped here)
    ends and Strands has added its last message to the history."""
    answer = _ANSWERS.get(agent)
    if answer is None or answer.task.done():
        action()
        return
    answer.stop.set()
    answer.task.add_done_callback(lambda _: action())


def _record_assistant_turn(agent: Agent, text: str, last_before_turn: Any) -> None:
    """Make `text` the history's last assistant turn: it replaces the answer Strands recorded (the
    whole answer, or "Cancelled by user" for a stopped one), or follows the user's message when Strands
    recorded none (the conversation must alternate user/assistant). A turn stopped before it reached the
    model added nothing (the history still ends with `last_before_turn`, compared by identity: Strands'
    sliding window drops messages from the front, so an index would move) and is left out."""
    messages = agent.messages
    if not messages or messages[-1] is last_before_turn:
        return
    message = {"role": "assistant", "content": [{"text": text}]}
    if messages[-1]["role"] == "assistant":
        messages[-1] = message
    else:
        messages.append(message)


@dataclass
class Conversation:
    """One AgentCore session: its Strands agent (whose `messages` are the history) and its latest
    turn's words."""

    agent: Agent
    spoken: SpokenTurn | None = None
    _last_before_turn: Any = None

    def busy(self) -> bool:
        """Whether a turn of this session is still running: its model is writing, or its text is
        complete and its speech still streams (a second turn beside it would speak over it, and an
        interrupt would reach only the newer one)."""
        return answering(self.agent) or (self.spoken is not None and not self.spoken.ended.is_set())

    def start_turn(self) -> SpokenTurn:
        self._last_before_turn = self.agent.messages[-1] if self.agent.messages else None
        self.spoken = SpokenTurn()
        return self.spoken

    async def interrupt(self, played_ms: float) -> str | None:
        """Barge-in: the listener heard `played_ms` of the latest turn's audio. Stops that turn (its
        speech and its model stream) if it is running, waits for it to let go (up to RELEASE_WAIT_S
        each), and records it in the history as what was heard (`SpokenTurn.heard_record`). Returns
        that record; None when there was no turn, it was already interrupted, or it was heard whole."""
        spoken = self.spoken
        if spoken is None or spoken.recorded:
            return None
        spoken.recorded = True
        spoken.interrupt_requested.set()
        answer = _ANSWERS.get(self.agent)
        if answer is not None:
            answer.stop.set()  # the model stops too, not only the speech (the next turn waits for it)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RELEASE_WAIT_S):
                await spoken.ended.wait()
        record = spoken.heard_record(played_ms)
        if record is not None:
            before = self._last_before_turn
            _after_answer(self.agent, lambda: _record_assistant_turn(self.agent, record, before))
        if answer is not None:
            await asyncio.wait({answer.task}, timeout=RELEASE_WAIT_S)
        return record

    async def discard(self) -> None:
        """The latest turn was started before the user had finished (agent.turn_taking) and is thrown
        away: its model stops, and once it has let go (up to RELEASE_WAIT_S) the history is as it was
        before the turn, as if it never ran."""
        answer = _ANSWERS.get(self.agent)
        if answer is not None:
            answer.stop.set()
            await asyncio.wait({answer.task}, timeout=RELEASE_WAIT_S)
        messages, before = self.agent.messages, self._last_before_turn
        if before is None:
            messages.clear()
        else:  # by identity, as _record_assistant_turn: the sliding window moves indices
            kept = next((i + 1 for i in range(len(messages) - 1, -1, -1) if messages[i] is before), None)
            if kept is not None:
                del messages[kept:]
        self.spoken = None


class Conversations:
    """One conversation (a Strands agent, so one history) per AgentCore session, least recently used
    evicted first, so a long-running runtime does not grow without bound; never one whose turn still
    runs (its model writes or its speech streams): evicted, its session's next prompt got a fresh
    conversation that was not busy and ran beside the answer still speaking, and an interrupt reached
    only the new one. While more than `limit` sessions speak at once, they are all kept. All of them
    share one `BedrockModel` (one boto3 client), so a turn does not pay for building a client."""

    def __init__(self, config: AgentConfig, limit: int = MAX_CONVERSATIONS) -> None:
        self._config = config
        self._model = build_model(config)
        self._limit = limit
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()

    def for_session(self, session_id: str | None) -> Conversation:
        if session_id is None:
            return Conversation(build_agent(self._config, self._model))
        conversation = self._conversations.pop(session_id, None) or Conversation(
            build_agent(self._config, self._model)
        )
        self._conversations[session_id] = conversation
        excess = len(self._conversations) - self._limit
        if excess > 0:
            idle = [sid for sid, held in self._conversations.items() if sid != session_id and not held.busy()]
            for sid in idle[:excess]:
                del self._conversations[sid]
        return conversation
