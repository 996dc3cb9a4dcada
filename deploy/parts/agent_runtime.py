"""The agent's runtime as a part: the voice agent on AgentCore Runtime (`voice_agent`: its role, the
runtime), speaking through the Kokoro endpoint and, with `--listen`, listening through the
speech-to-text endpoint."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deploy.aws import Aws
from deploy.errors import Problem
from deploy.model_dir import ModelSource
from deploy.parts.base import Identity, Part
from deploy.status import NOT_DEPLOYED, Status, endpoint_status, runtime_status
from deploy.teardown import image_lines
from deploy.waiters import wait_runtime_ready

if TYPE_CHECKING:
    from deploy.stacks import cdk


class AgentRuntimePart(Part):
    arm64_image = True

    @property
    def name(self) -> str:
        return self.config.product.agent.name

    @property
    def stacks(self) -> tuple[str, ...]:
        return self.config.product.agent.stacks

    def uses(self) -> tuple[str, ...]:
        product = self.config.product
        return (product.speech.name, *((product.listening.name,) if self.config.listen else ()))

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.stacks.agent_runtime import AgentRuntimeStack, RuntimeRoleStack

        base_id, runtime_id = self.stacks
        base = RuntimeRoleStack(app, base_id, config=self.config)
        runtime = AgentRuntimeStack(
            app, runtime_id, config=self.config, runtime_role_arn=base.runtime_role.role_arn
        )
        return [base, runtime]

    def builds_image(self) -> bool:
        return not self.config.agent_image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """Deployed without its endpoints, the agent needs the ones it speaks and listens through to
        exist already."""
        config = self.config
        needed = [(config.product.speech.name, "speaks", config.tts_endpoint, "--tts-endpoint")]
        if config.listen:
            needed.append((config.product.listening.name, "listens", config.stt_endpoint, "--stt-endpoint"))
        deployed = {part.name for part in parts}
        for part, does, endpoint, flag in needed:
            if part in deployed:
                continue
            if endpoint_status(aws.client("sagemaker"), endpoint).state == NOT_DEPLOYED:
                problems.append(
                    Problem(
                        f"endpoint {part}",
                        f"the agent {does} through {endpoint!r}, which does not exist",
                        f"python -m deploy deploy {part} first, or pass {flag}",
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
            *image_lines(outputs.get(self.stacks[-1], {}).get("ImageUri"), identity, self.name),
            f"- CloudWatch Logs: log groups starting with {prefix}",
            f"    list: aws logs describe-log-groups --log-group-name-prefix {prefix} --region {region}",
            f"    delete each: aws logs delete-log-group --log-group-name NAME --region {region}",
        ]
