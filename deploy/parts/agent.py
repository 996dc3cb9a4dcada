"""The agent part: the voice agent on AgentCore Runtime (runtime role, runtime), speaking through the
speech endpoint and, with `--listen`, listening through the speech-to-text endpoint."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.errors import Problem
from deploy.model_dir import ModelSource
from deploy.naming import agent_stack
from deploy.part import Identity, Part
from deploy.status import NOT_DEPLOYED, Status, endpoint_status, runtime_status
from deploy.teardown import image_lines
from deploy.waiters import wait_runtime_ready
from facts import STT_ENDPOINT

if TYPE_CHECKING:
    from deploy.stacks import cdk


class AgentPart(Part):
    kind = "agent"
    arm64_image = True

    @property
    def stacks(self) -> tuple[str, ...]:
        return agent_stack("Base"), agent_stack("Runtime")

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.agent_runtime import AgentRuntimeStack
        from deploy.stacks.base import AgentBaseStack

        base = AgentBaseStack(app, agent_stack("Base"), config=self.config)
        runtime = AgentRuntimeStack(
            app, agent_stack("Runtime"), config=self.config, runtime_role_arn=base.runtime_role.role_arn
        )
        return [base, runtime]

    def builds_image(self) -> bool:
        return not self.config.agent_image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """Deployed without the speech part (and, with `--listen`, the listening part), the agent needs
        the endpoints it speaks and listens through to exist."""
        config = self.config
        needed = [("speech", "speaks", config.endpoint_name, config.model, "--tts-endpoint")]
        if config.listen:
            needed.append(("listening", "listens", config.stt_endpoint, STT_ENDPOINT, "--stt-endpoint"))
        deployed = {part.kind for part in parts}
        for kind, does, endpoint, model, flag in needed:
            if kind in deployed:
                continue
            if endpoint_status(aws.client("sagemaker"), endpoint).state == NOT_DEPLOYED:
                problems.append(
                    Problem(
                        f"{kind} endpoint",
                        f"the agent {does} through {endpoint!r}, which does not exist",
                        f"speech-infra deploy {model} first, or pass {flag}",
                    )
                )

    def wait(self, aws: Aws) -> Status:
        return wait_runtime_ready(
            aws.client("bedrock-agentcore-control"),
            self.config.runtime_name,
            delay_s=self.config.wait_delay_s,
            attempts=self.config.wait_attempts,
        )

    def status(self, aws: Aws) -> Status:
        return runtime_status(aws.client("bedrock-agentcore-control"), self.config.runtime_name)

    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        region = identity.region
        prefix = f"/aws/bedrock-agentcore/runtimes/{self.config.runtime_name}-"
        return [
            *image_lines(outputs.get(agent_stack("Runtime"), {}).get("ImageUri"), identity, "agent"),
            f"- CloudWatch Logs: log groups starting with {prefix}",
            f"    list: aws logs describe-log-groups --log-group-name-prefix {prefix} --region {region}",
            f"    delete each: aws logs delete-log-group --log-group-name NAME --region {region}",
        ]
