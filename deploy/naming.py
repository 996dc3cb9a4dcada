"""Deterministic names: stacks, and which stacks make up each deployable part, in deploy order.

Destroy, status and the retention notice find everything again from these names alone, so they work
without synthesizing anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deploy.config import DeployConfig

PartKind = Literal["speech", "agent"]
VARIANT_NAME = "AllTraffic"
RUNTIME_ENDPOINT_NAME = "live"
MODEL_PREFIX_ROOT = "models"
CDK_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION_PARAMETER = f"/cdk-bootstrap/{CDK_QUALIFIER}/version"
MIN_BOOTSTRAP_VERSION = 6


def speech_stack(model: str, role: str) -> str:
    return f"KokoroSpeech-{model}-{role}"


def agent_stack(role: str) -> str:
    return f"VoiceAgent-{role}"


def model_prefix(model: str) -> str:
    """The key prefix of the model weights in the cache bucket (ends in `/`, as S3Prefix requires)."""
    return f"{MODEL_PREFIX_ROOT}/{model}/"


def assets_repository(account: str, region: str) -> str:
    """The CDK bootstrap ECR repository that holds every image asset of the account and region."""
    return f"cdk-{CDK_QUALIFIER}-container-assets-{account}-{region}"


@dataclass(frozen=True)
class Part:
    """A deployable unit: its kind and its stacks in deploy order (destroy walks them backwards)."""

    kind: PartKind
    stacks: tuple[str, ...]


def speech_part(config: DeployConfig) -> Part:
    return Part(
        "speech",
        (
            speech_stack(config.model, "ModelCache"),
            speech_stack(config.model, "Base"),
            speech_stack(config.model, "Endpoint"),
        ),
    )


def agent_part(config: DeployConfig) -> Part:
    return Part("agent", (agent_stack("Base"), agent_stack("Runtime")))


def all_parts(config: DeployConfig) -> tuple[Part, ...]:
    """Speech first: the agent speaks through the endpoint, so it goes up after it and down before it."""
    return speech_part(config), agent_part(config)
