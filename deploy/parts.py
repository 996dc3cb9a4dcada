"""The deployable parts: speech (the Kokoro endpoint) and the agent (the AgentCore runtime).

Each part knows its stacks in deploy order (destroy walks them backwards), how to build them into the
CDK app, what it needs before a deploy, how to wait for it and report it, and what destroy leaves
behind on purpose. The commands only walk the parts in order; nothing branches on which part it is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import Problem
from deploy.images import parse_ecr_uri
from deploy.model_dir import ModelSource
from deploy.naming import agent_stack, model_prefix, speech_stack
from deploy.prereqs import Identity
from deploy.stacks import cdk
from deploy.stacks.agent_runtime import AgentRuntimeStack
from deploy.stacks.base import AgentBaseStack, SpeechBaseStack
from deploy.stacks.endpoint import EndpointStack
from deploy.stacks.model_cache import ModelCacheStack
from deploy.status import Status, endpoint_status, runtime_status
from deploy.teardown import image_lines
from deploy.waiters import wait_endpoint_in_service, wait_runtime_ready


class Part(ABC):
    kind: str
    arm64_image: bool = False
    """Its image runs on ARM64 (AgentCore), so a local build needs an emulating builder."""

    def __init__(self, config: DeployConfig) -> None:
        self.config = config

    @property
    @abstractmethod
    def stacks(self) -> tuple[str, ...]:
        """Its stacks, in deploy order."""

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

    @abstractmethod
    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        """Lines for the notice of what destroy keeps, from the outputs of its deleted stacks."""


class SpeechPart(Part):
    kind = "speech"

    @property
    def stacks(self) -> tuple[str, ...]:
        model = self.config.model
        return speech_stack(model, "ModelCache"), speech_stack(model, "Base"), speech_stack(model, "Endpoint")

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        config, model = self.config, source()
        cache = ModelCacheStack(
            app, speech_stack(config.model, "ModelCache"), config=config, model_dir=model.directory
        )
        base = SpeechBaseStack(app, speech_stack(config.model, "Base"), config=config, bucket=cache.bucket)
        endpoint = EndpointStack(
            app,
            speech_stack(config.model, "Endpoint"),
            config=config,
            model_role_arn=base.model_role.role_arn,
            model_data_uri=cache.model_data_uri,
            default_voice=config.tts_voice or model.default_voice,
        )
        return [cache, base, endpoint]

    def builds_image(self) -> bool:
        return not self.config.tts_image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """SageMaker requires the ECR image in the region of the model (ContainerDefinition.Image)."""
        if not self.config.tts_image_uri:
            return
        image_region = parse_ecr_uri(self.config.tts_image_uri).region
        if image_region != identity.region:
            problems.append(
                Problem(
                    "tts image region",
                    f"{self.config.tts_image_uri} is in {image_region}, the deploy goes to {identity.region}",
                    f"push the image to ECR in {identity.region}, or deploy to {image_region}",
                )
            )

    def wait(self, aws: Aws) -> Status:
        return wait_endpoint_in_service(
            aws.client("sagemaker"),
            self.config.endpoint_name,
            delay_s=self.config.wait_delay_s,
            attempts=self.config.wait_attempts,
        )

    def status(self, aws: Aws) -> Status:
        return endpoint_status(aws.client("sagemaker"), self.config.endpoint_name)

    def retained(self, identity: Identity, outputs: dict[str, dict[str, str]]) -> list[str]:
        config, region = self.config, identity.region
        bucket = outputs.get(speech_stack(config.model, "ModelCache"), {}).get("BucketName")
        if bucket:
            lines = [
                f"- S3 model cache: bucket {bucket} (weights and voices under {model_prefix(config.model)})",
                f"    delete: aws s3 rb s3://{bucket} --force --region {region}",
            ]
        else:
            prefix = speech_stack(config.model, "ModelCache").lower()
            lines = [
                f"- S3 model cache: a bucket named {prefix}-modelbucket... (no outputs left to name it)",
                f"    find: aws s3api list-buckets --query \"Buckets[?starts_with(Name, '{prefix}')].Name\"",
                "    delete: aws s3 rb s3://BUCKET --force",
            ]
        endpoint_outputs = outputs.get(speech_stack(config.model, "Endpoint"), {})
        lines += image_lines(endpoint_outputs.get("ImageUri"), identity, "tts")
        log_group = f"/aws/sagemaker/Endpoints/{config.endpoint_name}"
        return [
            *lines,
            f"- CloudWatch Logs: {log_group}",
            f"    delete: aws logs delete-log-group --log-group-name {log_group} --region {region}",
        ]


class AgentPart(Part):
    kind = "agent"
    arm64_image = True

    @property
    def stacks(self) -> tuple[str, ...]:
        return agent_stack("Base"), agent_stack("Runtime")

    def build(self, app: cdk.App, source: Callable[[], ModelSource]) -> list[cdk.Stack]:
        base = AgentBaseStack(app, agent_stack("Base"), config=self.config)
        runtime = AgentRuntimeStack(
            app, agent_stack("Runtime"), config=self.config, runtime_role_arn=base.runtime_role.role_arn
        )
        return [base, runtime]

    def builds_image(self) -> bool:
        return not self.config.agent_image_uri

    def check(self, aws: Aws, identity: Identity, parts: Sequence[Part], problems: list[Problem]) -> None:
        """Deployed without the speech part, the agent needs the endpoint it speaks through to exist."""
        if any(isinstance(part, SpeechPart) for part in parts):
            return
        status = endpoint_status(aws.client("sagemaker"), self.config.endpoint_name)
        if status.state == "not deployed":
            problems.append(
                Problem(
                    "speech endpoint",
                    f"the agent speaks through {self.config.endpoint_name!r}, which does not exist",
                    f"speech-infra deploy {self.config.model} first, or pass --tts-endpoint",
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


def speech_part(config: DeployConfig) -> SpeechPart:
    return SpeechPart(config)


def agent_part(config: DeployConfig) -> AgentPart:
    return AgentPart(config)


def all_parts(config: DeployConfig) -> tuple[Part, ...]:
    """Speech first: the agent speaks through the endpoint, so it goes up after it and down before it."""
    return speech_part(config), agent_part(config)
