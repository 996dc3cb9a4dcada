"""The IAM statements the stacks' roles share: each role is allowed exactly what its service does at run
time, every statement names its resources.

- A SageMaker model role per endpoint (deploy/stacks/endpoint.py): pull its image, read its model
  prefix of the cache bucket when it has one (Whisper's weights are in its image), write the endpoint's
  own log group and its instance metrics.
- The AgentCore runtime role (deploy/stacks/agent_runtime.py): pull the agent image, call the speech
  endpoint and, with the listening endpoint, the speech-to-text endpoint (bidirectional stream only,
  each by its ARN), and the one Bedrock model (its profile and foundation-model ARNs), write its own logs.

The only `*` resources are actions IAM cannot scope: `ecr:GetAuthorizationToken`,
`cloudwatch:PutMetricData` (limited by namespace instead) and `logs:DescribeLogGroups` (a list action).
Creating endpoints, configs and models (`sagemaker:CreateEndpoint`, ...) is the deployer's job, done by
CloudFormation's execution role, so neither runtime role can do it.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam

from deploy.images import assets_repository, parse_ecr_uri

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


def pull_statements(stack: Stack, image_uri: str | None) -> list[iam.PolicyStatement]:
    """Pulling the image (`image_uri`'s repository, else CDK's) and the ECR login before it."""
    return [
        iam.PolicyStatement(
            sid="PullImage", actions=ECR_PULL_ACTIONS, resources=[image_repository_arn(stack, image_uri)]
        ),
        iam.PolicyStatement(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
    ]


def log_group_arn(stack: Stack, name: str) -> str:
    return stack.format_arn(
        service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
    )


def endpoint_arn(stack: Stack, name: str) -> str:
    # SageMaker writes endpoint ARNs in lower case.
    return stack.format_arn(service="sagemaker", resource="endpoint", resource_name=name.lower())


def invoke_endpoint(stack: Stack, sid: str, name: str) -> iam.PolicyStatement:
    """Streaming to one endpoint, by its ARN: the only call the agent makes to it."""
    return iam.PolicyStatement(
        sid=sid, actions=ENDPOINT_INVOKE_ACTIONS, resources=[endpoint_arn(stack, name)]
    )


def metrics_statement(sid: str, condition: dict[str, dict[str, str]]) -> iam.PolicyStatement:
    """PutMetricData has no resource to name: the namespace `condition` limits it instead."""
    return iam.PolicyStatement(
        sid=sid, actions=["cloudwatch:PutMetricData"], resources=["*"], conditions=condition
    )
