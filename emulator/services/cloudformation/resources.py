"""The resource types the emulator's CloudFormation creates: one entry of `RESOURCE_TYPES` per type,
so adding a type is one function and one line.

Each entry turns a resource's resolved properties into the other services' control operations
(`Context.call(service, operation, request)`: boto3's service names, the API's operation names, wired
by emulator/server/app.py as `Services.call`) and returns what was made (`Made`): its physical id, its
`Fn::GetAtt` attributes, the steps that delete it, and a note of what the emulator does not honour,
which becomes the resource's CREATE_COMPLETE event reason (never dropped without a word).

- SageMaker Model, EndpointConfig, Endpoint and the AgentCore Runtime and RuntimeEndpoint are created
  with the template's own properties (AgentCore's PascalCase turned into the API's camelCase). Image
  asset URIs (`...container-assets-...:<asset hash>`) become the local tags the asset was built as;
  `s3://BUCKET/PREFIX` becomes the `file://` URL of the bucket's local directory.
- An S3 bucket is a directory under the emulator's home (`<home>/buckets/<name>`); the CDK's
  BucketDeployment copies its staged source (the cloud assembly's `asset.<hash>` directory) under its
  key prefix, exactly the files its Lambda would upload. A bucket's name is held to S3's rules and every
  key and asset to its directory (shapes.py's `bucket_name` and `inside`) before anything is created.
- Application Auto Scaling targets and policies go to the emulator's autoscaling (recorded, not applied).
- CloudWatch alarms and dashboards go to a `cloudwatch` service when the emulator has one; otherwise,
  like IAM, Lambda and SNS (no email goes out locally), they are recorded as created, the event saying
  they are not emulated here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.services.cloudformation.shapes import Call, Made, Undo, bucket_name, inside
from emulator.services.cloudformation.template import Scope, TemplateError

ASSET_URI = re.compile(r"container-assets-[^:/]+:(?P<hash>[0-9a-f]{64})$")
STACK_TAG = "aws:cloudformation:stack-name"
"""The tag CloudFormation puts on what it creates (the manifest's tagged runtimes form a stack too)."""


Caller = Callable[[str, str, dict[str, Any]], dict[str, Any]]
"""Another service's control operation: (service, operation, request) -> response."""


@dataclass
class Context:
    """What a resource type creates with: the stack's scope, the other services, the local assets."""

    scope: Scope
    call: Caller
    offers: Callable[[str], bool]
    """Whether the emulator has a service (boto3's name)."""
    images: Mapping[str, str]
    """Image asset hash -> the local tag it was built as."""
    assembly: Path | None
    """The cloud assembly the template came from (its staged `asset.<hash>` directories)."""
    buckets: Path
    """A bucket named B is the directory `buckets / B`."""

    def name(self, logical: str, limit: int) -> str:
        """A deterministic physical name, as CloudFormation makes one from the stack and logical id."""
        return f"{self.scope.stack}-{logical}"[:limit].rstrip("-")

    def arn(self, service: str, resource: str, *, regional: bool = True) -> str:
        region = self.scope.region if regional else ""
        account = self.scope.account if service != "s3" else ""
        return f"arn:{self.scope.partition}:{service}:{region}:{account}:{resource}"

    def local_image(self, uri: str) -> str:
        """The local tag that stands for an image asset's ECR URI (any other image is used as named)."""
        match = ASSET_URI.search(uri)
        if match is None:
            return uri
        if match["hash"] not in self.images:
            raise TemplateError(f"image {uri} is not an image asset of this stack's cloud assembly")
        return self.images[match["hash"]]

    def local_model_uri(self, uri: str) -> str:
        """`s3://BUCKET/PREFIX` -> the `file://` URL of the bucket's local directory."""
        if not uri.startswith("s3://"):
            return uri
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        return inside(self.buckets, bucket_name(bucket), key).as_uri() + "/"


Create = Callable[[Context, str, dict[str, Any]], Made]


@dataclass(frozen=True)
class ResourceType:
    create: Create
    blocking: bool = False
    """Filesystem work (copying a model): run off the event loop."""


def unhonoured(kind: str, props: Mapping[str, Any], honoured: set[str]) -> str | None:
    extra = sorted(set(props) - honoured)
    return f"{kind}: not honoured by the emulator: {', '.join(extra)}" if extra else None


def _notes(*notes: str | None) -> str | None:
    return "; ".join(note for note in notes if note) or None


def recorded(what: str, arn: Callable[[Context, str], str] | None = None, name_limit: int = 64) -> Create:
    """A type the emulator does not create: recorded with a physical name (and an `Arn`), the event
    saying so."""

    def create(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
        name = ctx.name(logical, name_limit)
        attrs = {"Arn": arn(ctx, name)} if arn else {}
        return Made(name, attrs, note=f"recorded, not created: {what}")

    return create


def _iam_role(ctx: Context, name: str) -> str:
    return ctx.arn("iam", f"role/{name}", regional=False)


def _lambda(ctx: Context, name: str) -> str:
    return ctx.arn("lambda", f"function:{name}")


def sns_topic(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("TopicName") or ctx.name(logical, 256)
    arn = ctx.arn("sns", name)
    # Ref of a topic is its ARN.
    return Made(arn, {"TopicArn": arn, "TopicName": name}, note="recorded: SNS is not emulated locally")


def sns_subscription(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    endpoint, protocol = props.get("Endpoint", "?"), props.get("Protocol", "")
    arn = f"{props.get('TopicArn', ctx.arn('sns', 'topic'))}:{ctx.name(logical, 36)}"
    return Made(
        arn,
        note=f"recorded: SNS is not emulated locally; no {protocol} message goes to {endpoint}",
    )


def s3_bucket(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = bucket_name(props.get("BucketName") or ctx.name(logical, 63).lower())
    directory = inside(ctx.buckets, name)
    directory.mkdir(parents=True, exist_ok=True)
    attrs = {"Arn": ctx.arn("s3", name, regional=False), "DomainName": f"{name}.s3.amazonaws.com"}
    note = f"the directory {directory}" + (f"; not applied: {', '.join(sorted(props))}" if props else "")
    return Made(name, attrs, (Undo(directory=directory),), note)


def bucket_deployment(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    if ctx.assembly is None:
        raise TemplateError(
            f"{logical}: a BucketDeployment copies the cloud assembly's staged assets; give the template "
            "as TemplateURL=file://<assembly>/<stack>.template.json"
        )
    bucket = bucket_name(props["DestinationBucketName"])
    target = inside(ctx.buckets, bucket, str(props.get("DestinationBucketKeyPrefix", "")))
    for key in props["SourceObjectKeys"]:
        staged = inside(ctx.assembly, f"asset.{str(key).removesuffix('.zip')}")
        if not staged.is_dir():
            raise TemplateError(f"{logical}'s source {key} is not staged in {ctx.assembly}")
        if props.get("Prune", True) and target.exists():
            shutil.rmtree(target)
        shutil.copytree(staged, target, dirs_exist_ok=True)
    honoured = {"ServiceToken", "SourceBucketNames", "SourceObjectKeys", "DestinationBucketName"}
    honoured |= {"DestinationBucketKeyPrefix", "Prune"}
    return Made(f"{ctx.scope.stack}-{logical}", note=unhonoured("BucketDeployment", props, honoured))


MODEL_HONOURED = {"ExecutionRoleArn", "PrimaryContainer", "ModelName"}
CONTAINER_HONOURED = {"Image", "Environment", "ModelDataSource", "ModelDataUrl"}


def sagemaker_model(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("ModelName") or ctx.name(logical, 63)
    container = dict(props["PrimaryContainer"])
    container["Image"] = ctx.local_image(container["Image"])
    source = container.get("ModelDataSource", {}).get("S3DataSource")
    if source:
        source["S3Uri"] = ctx.local_model_uri(source["S3Uri"])
    if "ModelDataUrl" in container:
        container["ModelDataUrl"] = ctx.local_model_uri(container["ModelDataUrl"])
    body = {
        "ModelName": name,
        "ExecutionRoleArn": props["ExecutionRoleArn"],
        "PrimaryContainer": {k: v for k, v in container.items() if k in CONTAINER_HONOURED},
    }
    ctx.call("sagemaker", "CreateModel", body)
    undo = Undo(Call("sagemaker", "DeleteModel", {"ModelName": name}))
    note = _notes(
        unhonoured("Model", props, MODEL_HONOURED),
        unhonoured("Model container", container, CONTAINER_HONOURED),
    )
    return Made(name, {"ModelName": name}, (undo,), note)


VARIANT_HONOURED = {
    "VariantName",
    "ModelName",
    "InstanceType",
    "InitialInstanceCount",
    "InitialVariantWeight",
    "ContainerStartupHealthCheckTimeoutInSeconds",
    "RoutingConfig",
}


def sagemaker_endpoint_config(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("EndpointConfigName") or ctx.name(logical, 63)
    variants = props["ProductionVariants"]
    # Sent whole, so that DescribeEndpointConfig shows the template's values; noted when not honoured.
    ctx.call(
        "sagemaker", "CreateEndpointConfig", {"EndpointConfigName": name, "ProductionVariants": variants}
    )
    undo = Undo(Call("sagemaker", "DeleteEndpointConfig", {"EndpointConfigName": name}))
    note = _notes(
        unhonoured("EndpointConfig", props, {"EndpointConfigName", "ProductionVariants"}),
        *(unhonoured(f"Variant {v.get('VariantName', '?')}", v, VARIANT_HONOURED) for v in variants),
    )
    return Made(name, {"EndpointConfigName": name}, (undo,), note)


def sagemaker_endpoint(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("EndpointName") or ctx.name(logical, 63)
    ctx.call(
        "sagemaker",
        "CreateEndpoint",
        {"EndpointName": name, "EndpointConfigName": props["EndpointConfigName"]},
    )
    named = {"EndpointName": name}
    undo = Undo(
        Call("sagemaker", "DeleteEndpoint", named), gone_when=Call("sagemaker", "DescribeEndpoint", named)
    )
    note = unhonoured("Endpoint", props, {"EndpointName", "EndpointConfigName"})
    return Made(name, {"EndpointName": name}, (undo,), note)


SCALING_KEY = ("ResourceId", "ScalableDimension", "ServiceNamespace")
"""What names a scalable target, in the order of CloudFormation's Ref of one."""
SCALING_CONFIGURATIONS = ("TargetTrackingScalingPolicyConfiguration", "StepScalingPolicyConfiguration")


def scalable_target(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    key = {name: props[name] for name in SCALING_KEY}
    body = {**key, "MinCapacity": props["MinCapacity"], "MaxCapacity": props["MaxCapacity"]}
    ctx.call("application-autoscaling", "RegisterScalableTarget", body)
    undo = Undo(Call("application-autoscaling", "DeregisterScalableTarget", key))
    note = _notes(
        f"recorded, not applied (the emulator runs the variant's InitialInstanceCount; `emulator status` "
        f"shows {body['MinCapacity']}..{body['MaxCapacity']})",
        unhonoured("ScalableTarget", props, {*body}),
    )
    # CloudFormation's Ref of a scalable target: "resource id|dimension|namespace".
    return Made("|".join(key[name] for name in SCALING_KEY), undo=(undo,), note=note)


def scaling_policy(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    if "ScalingTargetId" in props:
        key = dict(zip(SCALING_KEY, props["ScalingTargetId"].split("|"), strict=True))
    else:
        key = {name: props[name] for name in SCALING_KEY}
    configured = {name: props[name] for name in SCALING_CONFIGURATIONS if name in props}
    named = {**key, "PolicyName": props["PolicyName"]}
    response = ctx.call(
        "application-autoscaling",
        "PutScalingPolicy",
        {**named, "PolicyType": props["PolicyType"], **configured},
    )
    undo = Undo(Call("application-autoscaling", "DeleteScalingPolicy", named))
    honoured = {*SCALING_KEY, "ScalingTargetId", "PolicyName", "PolicyType", *SCALING_CONFIGURATIONS}
    note = _notes(
        "recorded, not applied (the emulator does not autoscale)",
        unhonoured("ScalingPolicy", props, honoured),
    )
    arn = str(response.get("PolicyARN", props["PolicyName"]))
    return Made(arn, {"Arn": arn}, (undo,), note)


def camel(value: Any) -> Any:
    """CloudFormation's PascalCase keys -> the AgentCore API's camelCase."""
    if isinstance(value, list):
        return [camel(item) for item in value]
    if isinstance(value, dict):
        return {key[:1].lower() + key[1:]: camel(item) for key, item in value.items()}
    return value


RUNTIME_HONOURED = {
    "AgentRuntimeName",
    "AgentRuntimeArtifact",
    "RoleArn",
    "EnvironmentVariables",
    "NetworkConfiguration",
    "ProtocolConfiguration",
    "Description",
    "Tags",
}


def agent_runtime(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    artifact = camel(props["AgentRuntimeArtifact"])
    container = artifact["containerConfiguration"]
    container["containerUri"] = ctx.local_image(container["containerUri"])
    body: dict[str, Any] = {
        "agentRuntimeName": props["AgentRuntimeName"],
        "agentRuntimeArtifact": artifact,
        "roleArn": props["RoleArn"],
        "networkConfiguration": camel(props.get("NetworkConfiguration") or {"NetworkMode": "PUBLIC"}),
        "environmentVariables": dict(props.get("EnvironmentVariables") or {}),
        "tags": {**(props.get("Tags") or {}), STACK_TAG: ctx.scope.stack},
    }
    if props.get("ProtocolConfiguration"):
        body["protocolConfiguration"] = {"serverProtocol": props["ProtocolConfiguration"]}
    if props.get("Description"):
        body["description"] = props["Description"]
    response = ctx.call("bedrock-agentcore-control", "CreateAgentRuntime", body)
    runtime_id = response["agentRuntimeId"]
    named = {"agentRuntimeId": runtime_id}
    undo = Undo(
        Call("bedrock-agentcore-control", "DeleteAgentRuntime", named),
        gone_when=Call("bedrock-agentcore-control", "GetAgentRuntime", named),
    )
    attrs = {
        "AgentRuntimeId": runtime_id,
        "AgentRuntimeArn": response["agentRuntimeArn"],
        "AgentRuntimeVersion": str(response.get("agentRuntimeVersion", "1")),
    }
    note = unhonoured("Runtime", {k: v for k, v in props.items() if v}, RUNTIME_HONOURED)
    return Made(runtime_id, attrs, (undo,), note)


def agent_runtime_endpoint(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    runtime_id, name = props["AgentRuntimeId"], props["Name"]
    body = {"agentRuntimeId": runtime_id, "name": name}
    if props.get("AgentRuntimeVersion"):
        body["agentRuntimeVersion"] = props["AgentRuntimeVersion"]
    response = ctx.call("bedrock-agentcore-control", "CreateAgentRuntimeEndpoint", body)
    undo = Undo(
        Call(
            "bedrock-agentcore-control",
            "DeleteAgentRuntimeEndpoint",
            {"agentRuntimeId": runtime_id, "endpointName": name},
        )
    )
    attrs = {"Name": name, "AgentRuntimeEndpointArn": str(response.get("agentRuntimeEndpointArn", ""))}
    note = unhonoured("RuntimeEndpoint", props, {"AgentRuntimeId", "Name", "AgentRuntimeVersion"})
    return Made(name, attrs, (undo,), note)


NOT_EMULATED = "CloudWatch is not emulated locally (no cloudwatch service in this emulator)"


def cloudwatch_alarm(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("AlarmName") or ctx.name(logical, 255)
    arn = ctx.arn("cloudwatch", f"alarm:{name}")
    if not ctx.offers("cloudwatch"):
        return Made(name, {"Arn": arn}, note=f"recorded: {NOT_EMULATED}")
    ctx.call("cloudwatch", "PutMetricAlarm", {**props, "AlarmName": name})
    return Made(name, {"Arn": arn}, (Undo(Call("cloudwatch", "DeleteAlarms", {"AlarmNames": [name]})),))


def cloudwatch_dashboard(ctx: Context, logical: str, props: dict[str, Any]) -> Made:
    name = props.get("DashboardName") or ctx.name(logical, 255)
    if not ctx.offers("cloudwatch"):
        return Made(name, note=f"recorded: {NOT_EMULATED}")
    ctx.call("cloudwatch", "PutDashboard", {"DashboardName": name, "DashboardBody": props["DashboardBody"]})
    return Made(name, undo=(Undo(Call("cloudwatch", "DeleteDashboards", {"DashboardNames": [name]})),))


RESOURCE_TYPES: dict[str, ResourceType] = {
    "AWS::CDK::Metadata": ResourceType(recorded("the CDK's analytics metadata")),
    "AWS::IAM::Role": ResourceType(
        recorded("its ARN is passed on; trust and policies are not enforced", _iam_role)
    ),
    "AWS::IAM::Policy": ResourceType(recorded("the emulator has no IAM")),
    "AWS::S3::Bucket": ResourceType(s3_bucket),
    "AWS::S3::BucketPolicy": ResourceType(recorded("a local directory has no policy")),
    "Custom::CDKBucketDeployment": ResourceType(bucket_deployment, blocking=True),
    "AWS::Lambda::Function": ResourceType(
        recorded("the emulator copies a BucketDeployment's files itself", _lambda)
    ),
    "AWS::Lambda::LayerVersion": ResourceType(recorded("the emulator runs no Lambda", _lambda)),
    "AWS::SageMaker::Model": ResourceType(sagemaker_model),
    "AWS::SageMaker::EndpointConfig": ResourceType(sagemaker_endpoint_config),
    "AWS::SageMaker::Endpoint": ResourceType(sagemaker_endpoint),
    "AWS::ApplicationAutoScaling::ScalableTarget": ResourceType(scalable_target),
    "AWS::ApplicationAutoScaling::ScalingPolicy": ResourceType(scaling_policy),
    "AWS::BedrockAgentCore::Runtime": ResourceType(agent_runtime),
    "AWS::BedrockAgentCore::RuntimeEndpoint": ResourceType(agent_runtime_endpoint),
    "AWS::CloudWatch::Alarm": ResourceType(cloudwatch_alarm),
    "AWS::CloudWatch::Dashboard": ResourceType(cloudwatch_dashboard),
    "AWS::SNS::Topic": ResourceType(sns_topic),
    "AWS::SNS::Subscription": ResourceType(sns_subscription),
}
