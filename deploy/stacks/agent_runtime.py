"""The agent runtime's two stacks (deploy/parts/agent_runtime.py makes them):

- `RuntimeRoleStack` (`VoiceAgent-Base`): the AgentCore runtime's execution role (deploy/stacks/iam.py
  says what it may), trusted by AgentCore for this account's runtimes of this name only.
- `AgentRuntimeStack` (`VoiceAgent-Runtime`): the agent image built for ARM64 (AgentCore runs only
  ARM64 images), an AgentCore Runtime with the product's settings for the agent plus the Bedrock model
  and the region, and a named RuntimeEndpoint that follows the runtime's latest version.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from constructs import Construct

from deploy.bedrock import model_resource_arns
from deploy.config import DeployConfig
from deploy.images import ASSET_EXCLUDES, dockerfile_path
from deploy.stacks.iam import (
    BEDROCK_INVOKE_ACTIONS,
    invoke_endpoint,
    log_group_arn,
    metrics_statement,
    pull_statements,
)

WORKLOAD_TOKEN_ACTIONS = [
    "bedrock-agentcore:GetWorkloadAccessToken",
    "bedrock-agentcore:GetWorkloadAccessTokenForJWT",
    "bedrock-agentcore:GetWorkloadAccessTokenForUserId",
]


def runtime_environment(config: DeployConfig) -> dict[str, str]:
    """The variables the agent reads (agent/config.py): the product's settings for it (its endpoints,
    the speech-to-text one only when the listening endpoint is deployed, `--listen`; its voice), the
    Bedrock model and the region."""
    listens = config.stt_endpoint if config.listen else None
    settings = config.product.agent.settings(config.voice, config.tts_endpoint, listens)
    return {**settings, "AGENT_BEDROCK_MODEL_ID": config.bedrock_model_id, "AWS_REGION": Aws.REGION}


class RuntimeRoleStack(Stack):
    """The AgentCore runtime role of the voice agent."""

    def __init__(self, scope: Construct, stack_id: str, *, config: DeployConfig):
        super().__init__(scope, stack_id, description="Voice agent: AgentCore runtime execution role")
        self.runtime_role = iam.Role(
            self,
            "RuntimeRole",
            assumed_by=iam.ServicePrincipal(
                "bedrock-agentcore.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnLike": {
                        "aws:SourceArn": self.format_arn(
                            service="bedrock-agentcore",
                            resource="runtime",
                            resource_name=f"{config.runtime_name}*",
                        )
                    },
                },
            ),
            description="AgentCore runs the voice agent with this role",
            inline_policies={"VoiceAgent": iam.PolicyDocument(statements=self._statements(config))},
        )
        CfnOutput(self, "RuntimeRoleArn", value=self.runtime_role.role_arn)

    def _statements(self, config: DeployConfig) -> list[iam.PolicyStatement]:
        listen = (
            [invoke_endpoint(self, "InvokeListeningEndpoint", config.stt_endpoint)] if config.listen else []
        )
        model_arns = model_resource_arns(
            config.bedrock_model_id, partition=Aws.PARTITION, region=Aws.REGION, account=Aws.ACCOUNT_ID
        )
        return [
            *pull_statements(self, config.agent_image_uri),
            invoke_endpoint(self, "InvokeSpeechEndpoint", config.tts_endpoint),
            *listen,
            iam.PolicyStatement(
                sid="InvokeBedrockModel", actions=BEDROCK_INVOKE_ACTIONS, resources=model_arns
            ),
            *self._log_statements(f"/aws/bedrock-agentcore/runtimes/{config.runtime_name}-*"),
            metrics_statement(
                "RuntimeMetrics", {"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}}
            ),
            self._workload_token_statement(config.runtime_name),
        ]

    def _log_statements(self, runtime_logs: str) -> list[iam.PolicyStatement]:
        return [
            iam.PolicyStatement(
                sid="RuntimeLogGroups",
                actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"],
                resources=[log_group_arn(self, runtime_logs)],
            ),
            iam.PolicyStatement(
                sid="RuntimeLogStreams",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group_arn(self, f"{runtime_logs}:log-stream:*")],
            ),
            iam.PolicyStatement(
                sid="DescribeLogGroups",
                actions=["logs:DescribeLogGroups"],
                resources=[log_group_arn(self, "*")],
            ),
        ]

    def _workload_token_statement(self, runtime_name: str) -> iam.PolicyStatement:
        directory = self.format_arn(
            service="bedrock-agentcore", resource="workload-identity-directory", resource_name="default"
        )
        return iam.PolicyStatement(
            sid="WorkloadAccessToken",
            actions=WORKLOAD_TOKEN_ACTIONS,
            resources=[directory, f"{directory}/workload-identity/{runtime_name}-*"],
        )


def agent_image(scope: Construct, config: DeployConfig) -> tuple[agentcore.AgentRuntimeArtifact, str]:
    """The runtime artifact and its image URI: the given URI, else the agent image built for ARM64."""
    if config.agent_image_uri:
        uri = config.agent_image_uri
        return agentcore.AgentRuntimeArtifact.from_image_uri(uri), uri
    image = config.product.agent.image
    dockerfile = image.dockerfile
    dockerfile_path(config.source_dir, dockerfile)
    asset = ecr_assets.DockerImageAsset(
        scope,
        "AgentImage",
        directory=str(config.source_dir),
        file=dockerfile,
        platform=ecr_assets.Platform.custom(image.platform or "linux/arm64"),  # AgentCore's only platform
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
            description=f"Voice agent speaking through SageMaker endpoint {config.tts_endpoint}",
        )
        endpoint = agentcore.RuntimeEndpoint(
            self,
            "RuntimeEndpoint",
            agent_runtime_id=runtime.agent_runtime_id,
            agent_runtime_version=runtime.agent_runtime_version,
            endpoint_name=config.product.agent.endpoint,
        )
        CfnOutput(self, "RuntimeArn", value=runtime.agent_runtime_arn)
        CfnOutput(self, "RuntimeId", value=runtime.agent_runtime_id)
        CfnOutput(self, "RuntimeEndpointName", value=endpoint.endpoint_name)
        CfnOutput(self, "ImageUri", value=image_uri)
