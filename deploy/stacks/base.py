"""Base stacks: the IAM roles, each allowed exactly what its service does at run time.

- A SageMaker model role per endpoint (Kokoro's, Whisper's): pull its image, read its model prefix of
  the cache bucket when it has one (Whisper's weights are in its image), write the endpoint's own log
  group and its instance metrics.
- The AgentCore runtime role: pull the agent image, call the speech endpoint and, with the listening
  part, the speech-to-text endpoint (bidirectional stream only, each by its ARN), and the one Bedrock
  model (its profile and foundation-model ARNs), write its own logs.

Every statement names its resources. The only `*` resources are actions IAM cannot scope:
`ecr:GetAuthorizationToken`, `cloudwatch:PutMetricData` (limited by namespace instead) and
`logs:DescribeLogGroups` (a list action). Creating endpoints, configs and models
(`sagemaker:CreateEndpoint`, ...) is the deployer's job, done by CloudFormation's execution role, so
neither runtime role can do it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, Aws, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from deploy.bedrock import model_resource_arns
from deploy.config import DeployConfig, EndpointSettings
from deploy.images import parse_ecr_uri
from deploy.naming import assets_repository

ECR_PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
# The agent speaks and listens through the bidirectional stream only (agent/endpoint_stream.py, under
# agent/tts_session.py and agent/stt_session.py).
ENDPOINT_INVOKE_ACTIONS = ["sagemaker:InvokeEndpointWithBidirectionalStream"]
BEDROCK_INVOKE_ACTIONS = ["bedrock:InvokeModelWithResponseStream", "bedrock:InvokeModel"]


def image_repository_arn(stack: Stack, image_uri: str | None) -> str:
    """The ECR repository an image comes from: the given URI's, else CDK's image-asset repository."""
    if image_uri:
        image = parse_ecr_uri(image_uri)
        return f"arn:{Aws.PARTITION}:ecr:{image.region}:{image.account}:repository/{image.repository}"
    return stack.format_arn(
        service="ecr", resource="repository", resource_name=assets_repository(Aws.ACCOUNT_ID, Aws.REGION)
    )


def _pull_statements(repository_arn: str) -> list[iam.PolicyStatement]:
    return [
        iam.PolicyStatement(sid="PullImage", actions=ECR_PULL_ACTIONS, resources=[repository_arn]),
        iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
    ]


def _log_group_arn(stack: Stack, name: str) -> str:
    return stack.format_arn(
        service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
    )


def _endpoint_arn(stack: Stack, name: str) -> str:
    # SageMaker writes endpoint ARNs in lower case.
    return stack.format_arn(service="sagemaker", resource="endpoint", resource_name=name.lower())


@dataclass(frozen=True)
class ModelData:
    """Where a model's data is read from: the cache bucket and the key prefix (ends in `/`, as S3Prefix
    requires)."""

    bucket: s3.IBucket
    prefix: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"


class ModelRoleStack(Stack):
    """The SageMaker execution role of one endpoint's model (`model_data`: the prefix it reads, if any)."""

    def __init__(
        self,
        scope: Construct,
        stack_id: str,
        *,
        model: str,
        settings: EndpointSettings,
        model_data: ModelData | None = None,
    ):
        super().__init__(scope, stack_id, description=f"{model}: SageMaker model execution role")
        log_group = f"/aws/sagemaker/Endpoints/{settings.name}"
        read_model = []
        if model_data is not None:
            bucket, prefix = model_data.bucket, model_data.prefix
            read_model = [
                iam.PolicyStatement(
                    sid="ListModelPrefix",
                    actions=["s3:ListBucket"],
                    resources=[bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
                ),
                iam.PolicyStatement(
                    sid="ReadModel",
                    actions=["s3:GetObject"],
                    resources=[bucket.arn_for_objects(f"{prefix}*")],
                ),
            ]
        document = iam.PolicyDocument(
            statements=[
                *_pull_statements(image_repository_arn(self, settings.image_uri)),
                *read_model,
                iam.PolicyStatement(
                    sid="EndpointLogs",
                    actions=[
                        "logs:CreateLogGroup",
                        "logs:CreateLogStream",
                        "logs:PutLogEvents",
                        "logs:DescribeLogStreams",
                    ],
                    resources=[_log_group_arn(self, log_group), _log_group_arn(self, f"{log_group}:*")],
                ),
                iam.PolicyStatement(
                    sid="EndpointMetrics",
                    actions=["cloudwatch:PutMetricData"],
                    resources=["*"],
                    conditions={"StringLike": {"cloudwatch:namespace": "/aws/sagemaker/*"}},
                ),
            ]
        )
        self.model_role = iam.Role(
            self,
            "ModelRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"SageMaker runs the {model} container with this role",
            inline_policies={"SpeechModel": document},
        )
        CfnOutput(self, "ModelRoleArn", value=self.model_role.role_arn)


class AgentBaseStack(Stack):
    """The AgentCore runtime role of the voice agent."""

    def __init__(self, scope: Construct, stack_id: str, *, config: DeployConfig):
        super().__init__(scope, stack_id, description="Voice agent: AgentCore runtime execution role")
        runtime_logs = f"/aws/bedrock-agentcore/runtimes/{config.runtime_name}-*"
        listen = []
        if config.listen:
            listen = [
                iam.PolicyStatement(
                    sid="InvokeListeningEndpoint",
                    actions=ENDPOINT_INVOKE_ACTIONS,
                    resources=[_endpoint_arn(self, config.stt_endpoint)],
                )
            ]
        model_arns = model_resource_arns(
            config.bedrock_model_id, partition=Aws.PARTITION, region=Aws.REGION, account=Aws.ACCOUNT_ID
        )
        identity_directory = self.format_arn(
            service="bedrock-agentcore", resource="workload-identity-directory", resource_name="default"
        )
        document = iam.PolicyDocument(
            statements=[
                *_pull_statements(image_repository_arn(self, config.agent_image_uri)),
                iam.PolicyStatement(
                    sid="InvokeSpeechEndpoint",
                    actions=ENDPOINT_INVOKE_ACTIONS,
                    resources=[_endpoint_arn(self, config.endpoint_name)],
                ),
                *listen,
                iam.PolicyStatement(
                    sid="InvokeBedrockModel", actions=BEDROCK_INVOKE_ACTIONS, resources=model_arns
                ),
                iam.PolicyStatement(
                    sid="RuntimeLogGroups",
                    actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"],
                    resources=[_log_group_arn(self, runtime_logs)],
                ),
                iam.PolicyStatement(
                    sid="RuntimeLogStreams",
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[_log_group_arn(self, f"{runtime_logs}:log-stream:*")],
                ),
                iam.PolicyStatement(
                    sid="DescribeLogGroups",
                    actions=["logs:DescribeLogGroups"],
                    resources=[_log_group_arn(self, "*")],
                ),
                iam.PolicyStatement(
                    sid="RuntimeMetrics",
                    actions=["cloudwatch:PutMetricData"],
                    resources=["*"],
                    conditions={"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}},
                ),
                iam.PolicyStatement(
                    sid="WorkloadAccessToken",
                    actions=[
                        "bedrock-agentcore:GetWorkloadAccessToken",
                        "bedrock-agentcore:GetWorkloadAccessTokenForJWT",
                        "bedrock-agentcore:GetWorkloadAccessTokenForUserId",
                    ],
                    resources=[
                        identity_directory,
                        f"{identity_directory}/workload-identity/{config.runtime_name}-*",
                    ],
                ),
            ]
        )
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
            inline_policies={"VoiceAgent": document},
        )
        CfnOutput(self, "RuntimeRoleArn", value=self.runtime_role.role_arn)
