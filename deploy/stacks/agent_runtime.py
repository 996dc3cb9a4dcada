"""Agent runtime stack: the agent image built for ARM64 (AgentCore runs only ARM64 images), an
AgentCore Runtime with the endpoint name and Bedrock model in its environment, and a named
RuntimeEndpoint that follows the runtime's latest version."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from constructs import Construct

from deploy.config import AGENT_DOCKERFILE, DeployConfig
from deploy.images import ASSET_EXCLUDES, dockerfile_path
from deploy.naming import RUNTIME_ENDPOINT_NAME


def runtime_environment(config: DeployConfig) -> dict[str, str]:
    """The variables the agent reads (agent/config.py); without a chosen voice the agent keeps its own,
    and the speech-to-text endpoint is named only when the listening part is deployed (`--listen`)."""
    env = {
        "AGENT_TTS_ENDPOINT": config.endpoint_name,
        "AGENT_BEDROCK_MODEL_ID": config.bedrock_model_id,
        "AWS_REGION": Aws.REGION,
    }
    if config.listen:
        env["AGENT_STT_ENDPOINT"] = config.stt_endpoint
    if config.tts_voice:
        env["AGENT_TTS_VOICE"] = config.tts_voice
    return env


def agent_image(scope: Construct, config: DeployConfig) -> tuple[agentcore.AgentRuntimeArtifact, str]:
    """The runtime artifact and its image URI: the given URI, else the agent image built for ARM64."""
    if config.agent_image_uri:
        uri = config.agent_image_uri
        return agentcore.AgentRuntimeArtifact.from_image_uri(uri), uri
    dockerfile_path(config.source_dir, AGENT_DOCKERFILE)
    asset = ecr_assets.DockerImageAsset(
        scope,
        "AgentImage",
        directory=str(config.source_dir),
        file=AGENT_DOCKERFILE,
        platform=ecr_assets.Platform.LINUX_ARM64,
        exclude=list(ASSET_EXCLUDES),
        display_name="voice agent image (ARM64)",
    )
    return agentcore.AgentRuntimeArtifact.from_ecr_repository(
        asset.repository, asset.image_tag
    ), asset.image_uri


class AgentRuntimeStack(Stack):
    def __init__(self, scope: Construct, stack_id: str, *, config: DeployConfig, runtime_role_arn: str):
        super().__init__(scope, stack_id, description="Voice agent: AgentCore runtime")
        # Immutable: the role's policy is complete in the base stack; the construct must not widen it.
        role = iam.Role.from_role_arn(self, "RuntimeRole", runtime_role_arn, mutable=False)
        artifact, image_uri = agent_image(self, config)
        runtime = agentcore.Runtime(
            self,
            "Runtime",
            runtime_name=config.runtime_name,
            agent_runtime_artifact=artifact,
            execution_role=role,
            environment_variables=runtime_environment(config),
            description=f"Voice agent speaking through SageMaker endpoint {config.endpoint_name}",
        )
        endpoint = agentcore.RuntimeEndpoint(
            self,
            "RuntimeEndpoint",
            agent_runtime_id=runtime.agent_runtime_id,
            agent_runtime_version=runtime.agent_runtime_version,
            endpoint_name=RUNTIME_ENDPOINT_NAME,
        )
        CfnOutput(self, "RuntimeArn", value=runtime.agent_runtime_arn)
        CfnOutput(self, "RuntimeId", value=runtime.agent_runtime_id)
        CfnOutput(self, "RuntimeEndpointName", value=endpoint.endpoint_name)
        CfnOutput(self, "ImageUri", value=image_uri)
