"""The deployable parts, one module per product: `speech` (the Kokoro endpoint) and `agent` (the
AgentCore runtime). Each implements `deploy.part.Part`; the command lines only walk them in order."""

from __future__ import annotations

from deploy.config import DeployConfig
from deploy.part import Part
from deploy.parts.agent import AgentPart
from deploy.parts.speech import SpeechPart


def all_parts(config: DeployConfig) -> tuple[Part, ...]:
    """Speech first: the agent speaks through the endpoint, so it goes up after it and down before it."""
    return SpeechPart(config), AgentPart(config)
