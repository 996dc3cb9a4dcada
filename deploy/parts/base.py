"""What a deployable part is (the `Part` interface) and who deploys where (`Identity`).

A part is one thing the product's definition names (deploy/product.py): an endpoint (`endpoint.py`:
`kokoro-82m`, `whisper-stt`) or the agent's runtime (`agent_runtime.py`: `voice_agent`), called by that
name. It knows its stacks in deploy order (destroy walks them backwards), how to build them into the
CDK app, what it needs before a deploy, how to wait for it and report it, and what destroy leaves
behind on purpose. The prerequisites, the orchestration and the teardown see only this interface and
never branch on which part it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import Problem
from deploy.model_dir import ModelSource
from deploy.status import Status

if TYPE_CHECKING:
    # Types only: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
    from deploy.stacks import cdk


@dataclass(frozen=True)
class Identity:
    """The caller STS confirmed, and the region the deploy goes to."""

    account: str
    region: str
    arn: str


class Part(ABC):
    arm64_image: bool = False
    """Its image runs on ARM64 (AgentCore), so a local build needs an emulating builder."""

    def __init__(self, config: DeployConfig) -> None:
        self.config = config

    @property
    @abstractmethod
    def name(self) -> str:
        """Its name in the product's definition, which the command line takes and its lines begin with."""

    @property
    @abstractmethod
    def stacks(self) -> tuple[str, ...]:
        """Its stacks, in deploy order."""

    def uses(self) -> tuple[str, ...]:
        """The parts it works through (the agent: its endpoints), which its status reports too."""
        return ()

    @abstractmethod
    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        """Add its stacks to the CDK app (`source` gives the model files, resolved on first use)."""

    @abstractmethod
    def builds_image(self) -> bool:
        """Its image is built from this repository (a Docker asset) rather than given by URI."""

    @abstractmethod
    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """Its own prerequisites, beyond credentials, the CDK CLI, Docker and the bootstrap."""

    @abstractmethod
    def wait(self, aws: Aws) -> Status:
        """Until it serves (or fails); its status then."""

    @abstractmethod
    def status(self, aws: Aws) -> Status: ...

    def summary(self) -> list[str]:
        """Lines synth and deploy print about what the stacks will run (images, AMI)."""
        return []

    @abstractmethod
    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        """Lines for the notice of what destroy keeps, from the outputs of its deleted stacks."""
