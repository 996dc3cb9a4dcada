"""The language model side of a turn: a Strands agent on Amazon Bedrock, streaming text deltas.

`BedrockModel` talks to Bedrock Runtime through boto3, which takes its endpoint from
`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` when set: that is how the same code reaches the emulator locally.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator

from strands import Agent
from strands.models.bedrock import BedrockModel

from agent.config import AgentConfig

MAX_CONVERSATIONS = 256


def build_model(config: AgentConfig) -> BedrockModel:
    return BedrockModel(model_id=config.bedrock_model_id, region_name=config.region, streaming=True)


def build_agent(config: AgentConfig, model: BedrockModel) -> Agent:
    return Agent(model=model, system_prompt=config.system_prompt, callback_handler=None)


async def text_deltas(agent: Agent, prompt: str) -> AsyncIterator[str]:
    """The speakable text of the answer as it streams: text deltas, without reasoning or citations."""
    async for event in agent.stream_async(prompt):
        data = event.get("data")
        if isinstance(data, str) and data and not event.get("reasoning") and "citation" not in event:
            yield data


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
