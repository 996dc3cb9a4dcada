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
from deploy.naming import Part, agent_stack, speech_stack
from deploy.stacks import cdk
from deploy.stacks.agent_runtime import AgentRuntimeStack
from deploy.stacks.base import AgentBaseStack, SpeechBaseStack
from deploy.stacks.endpoint import EndpointStack
from deploy.stacks.model_cache import ModelCacheStack

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
    kinds = {part.kind for part in parts}
    if "speech" in kinds:
        source = source or resolve_model_source(config)
        cache = ModelCacheStack(
            app, speech_stack(config.model, "ModelCache"), config=config, model_dir=source.directory
        )
        base = SpeechBaseStack(app, speech_stack(config.model, "Base"), config=config, bucket=cache.bucket)
        endpoint = EndpointStack(
            app,
            speech_stack(config.model, "Endpoint"),
            config=config,
            model_role_arn=base.model_role.role_arn,
            model_data_uri=cache.model_data_uri,
            default_voice=config.tts_voice or source.default_voice,
        )
        stacks.update({stack.stack_name: stack for stack in (cache, base, endpoint)})
    if "agent" in kinds:
        agent_base = AgentBaseStack(app, agent_stack("Base"), config=config)
        runtime = AgentRuntimeStack(
            app, agent_stack("Runtime"), config=config, runtime_role_arn=agent_base.runtime_role.role_arn
        )
        stacks.update({stack.stack_name: stack for stack in (agent_base, runtime)})
    cdk.Tags.of(app).add("project", PROJECT_TAG)
    return BuiltApp(app, stacks)


def synth(config: DeployConfig, parts: Sequence[Part], source: ModelSource | None = None) -> Path:
    """Synthesize the parts' stacks into `config.outdir`; returns the assembly directory."""
    built = build_app(config, parts, config.outdir, source)
    return Path(built.app.synth().directory)
