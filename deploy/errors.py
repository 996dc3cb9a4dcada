"""Typed errors of the deploy commands: each one says what is wrong and what to do about it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DeployError(Exception):
    """A deploy, destroy, synth or status command cannot go on; the message is meant for the user."""


class ConfigError(DeployError, ValueError):
    """A setting (flag or `DEPLOY_*` variable) that cannot be used."""


@dataclass(frozen=True)
class Problem:
    """One missing prerequisite: what is missing, what was seen, how to fix it."""

    name: str
    detail: str
    fix: str

    def __str__(self) -> str:
        return f"- {self.name}: {self.detail}\n  fix: {self.fix}"


class MissingPrerequisites(DeployError):
    """Every prerequisite that failed, reported together so that one round of fixes is enough."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        lines = "\n".join(str(problem) for problem in self.problems)
        super().__init__(f"{len(self.problems)} prerequisite(s) missing:\n{lines}")


class CdkFailed(DeployError):
    """The `cdk` CLI exited with an error (its own output has already been shown)."""


class WaitFailed(DeployError):
    """A resource ended in a failed state, or did not become ready in time."""


class TeardownFailed(DeployError):
    """A stack could not be deleted."""
