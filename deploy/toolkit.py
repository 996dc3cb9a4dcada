"""The one seam between the commands and where the stacks go: a `Toolkit` receives the synthesized
template and applies it, and knows what must hold before it can (`check`) and how to take it down.

Two implementations: `CdkToolkit` (deploy/cdk_toolkit.py: the `cdk` CLI against AWS, CloudFormation's
teardown) and `LocalToolkit` (deploy/local_toolkit.py: the same assembly given to the emulator's
CloudFormation, the same teardown). The commands choose one, with the clients (`Aws`) that reach
it, in one place (`deploy.orchestrate.target`); the orchestration sees only this interface.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.parts.base import Identity, Part

Echo = Callable[[str], None]


class Toolkit(Protocol):
    def check(self, config: DeployConfig, aws: Aws, parts: Sequence[Part]) -> Identity:
        """Every prerequisite of a deploy, reported together (`MissingPrerequisites`); who deploys where."""
        ...

    def synth(self, parts: Sequence[Part]) -> Path:
        """The cloud assembly of `parts` (the same for every toolkit)."""
        ...

    def deploy(self, stacks: Sequence[str]) -> None:
        """Apply these stacks of the assembly, in order."""
        ...

    def destroy(self, parts: Sequence[Part], aws: Aws, identity: Identity, echo: Echo) -> str:
        """Take `parts` down, last deployed first; the notice of what is left."""
        ...
