"""The CDK app: builds the stacks of the requested parts and synthesizes them into a cloud assembly.

Synthesis is offline: no credentials (the stacks are environment-agnostic; the account and region are
CloudFormation pseudo parameters) and no Docker (image assets are only staged into the assembly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy.config import DeployConfig
from deploy.model_dir import ModelSource, resolve_model_source
from deploy.parts.base import Part
from deploy.stacks import cdk

PROJECT_TAG = "voice-agent-aws"


@dataclass(frozen=True)
class BuiltApp:
    app: cdk.App
    stacks: dict[str, cdk.Stack]


def build_app(
    config: DeployConfig, parts: Sequence[Part], outdir: Path, source: ModelSource | None = None
) -> BuiltApp:
    """The app with the stacks of `parts`; `source` defaults to `resolve_model_source(config)`."""
    app = cdk.App(outdir=str(outdir), analytics_reporting=False)
    stacks: dict[str, cdk.Stack] = {}
    resolved: list[ModelSource] = [source] if source is not None else []

    def model_source() -> ModelSource:
        if not resolved:
            resolved.append(resolve_model_source(config))
        return resolved[0]

    for part in parts:
        stacks.update({stack.stack_name: stack for stack in part.build(app, model_source)})
    cdk.Tags.of(app).add("project", PROJECT_TAG)
    return BuiltApp(app, stacks)


def synth(config: DeployConfig, parts: Sequence[Part], source: ModelSource | None = None) -> Path:
    """Synthesize the parts' stacks into `config.outdir`; returns the assembly directory."""
    built = build_app(config, parts, config.outdir, source)
    return Path(built.app.synth().directory)
