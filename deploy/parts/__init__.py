"""The deployable parts, one module per product: `speech` (the Kokoro endpoint), `listening` (the Whisper
endpoint, with `--listen`) and `agent` (the AgentCore runtime). Each implements `deploy.part.Part`, the
two endpoints through `parts/endpoint.py`; the command lines only walk them in order."""

from __future__ import annotations

from deploy.config import DeployConfig
from deploy.part import Part
from deploy.parts.agent import AgentPart
from deploy.parts.listening import ListeningPart
from deploy.parts.speech import SpeechPart


def all_parts(config: DeployConfig, *, listening: bool | None = None) -> tuple[Part, ...]:
    """The endpoints first: the agent speaks and listens through them, so it goes up after them and
    down before them. `listening` (default: `config.listen`) includes the speech-to-text endpoint."""
    endpoints: tuple[Part, ...] = (SpeechPart(config),)
    if config.listen if listening is None else listening:
        endpoints += (ListeningPart(config),)
    return *endpoints, AgentPart(config)
