"""A synthesized stack's resources as the boto3 calls that create them on the emulator, in template order.

What CloudFormation would do with `<stack>.template.json`, done by `apply_stack` through one `Caller`
(boto3 against the emulator for `--target local`; a recorder in the tests):

- Intrinsics (`Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::ImportValue`, the pseudo parameters)
  resolve against a `Scope`: the emulator's account and region, each resource's name and attributes as
  it is created, and the exports of the stacks applied before.
- SageMaker Model, EndpointConfig, Endpoint and the AgentCore Runtime and RuntimeEndpoint are created
  with the template's own properties (AgentCore's PascalCase turned into the API's camelCase). The
  image asset URIs (`...container-assets-...:<asset hash>`) become the local tags the asset was built
  as; an `s3://BUCKET/PREFIX` becomes the `file://` URL of that bucket's local directory.
- An S3 bucket is a directory under `LocalAssets.bucket_root`; the BucketDeployment custom resource
  copies its staged source (the `asset.<hash>` directory of the cloud assembly) under its key prefix,
  exactly the files the Lambda would upload.
- Autoscaling (the scalable target, its policy) goes to the emulator's Application Auto Scaling, which
  records it and shows it in `emulator status` but does not scale.
- What the emulator cannot honour (IAM policies, bucket settings, the AMI, autoscaling, tags, ...) is
  listed in `StackResult.unhonoured`, one line per resource, never dropped without a word.

`StackResult.undo` lists, newest last, the calls that delete what was made (destroy runs them
backwards).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deploy.errors import DeployError

STACK_TAG = "aws:cloudformation:stack-name"
"""The tag CloudFormation puts on what it creates; the emulator's CloudFormation reads it."""

ASSET_URI = re.compile(r"container-assets-[^:/]+:(?P<hash>[0-9a-f]{64})$")


class TemplateError(DeployError):
    """A template the rehearsal cannot apply (an intrinsic or a resource type it does not know)."""


@dataclass(frozen=True)
class Call:
    service: str
    """The boto3 client name, or `local` for what the rehearsal does on this machine."""
    operation: str
    params: dict[str, Any]


Caller = Callable[[Call], dict[str, Any]]


@dataclass
class Scope:
    """What intrinsics resolve against: the account, the region and every resource made so far."""

    account: str
    region: str
    partition: str = "aws"
    url_suffix: str = "amazonaws.com"
    stack: str = ""
    refs: dict[str, str] = field(default_factory=dict)
    attrs: dict[tuple[str, str], str] = field(default_factory=dict)
    exports: dict[str, str] = field(default_factory=dict)

    def pseudo(self, name: str) -> str:
        values = {
            "AWS::AccountId": self.account,
            "AWS::Region": self.region,
            "AWS::Partition": self.partition,
            "AWS::URLSuffix": self.url_suffix,
            "AWS::StackName": self.stack,
        }
        if name in values:
            return values[name]
        if name in self.refs:
            return self.refs[name]
        raise TemplateError(f"{self.stack}: Ref {name} names nothing created before it")


def resolve(value: Any, scope: Scope) -> Any:
    """`value` with every intrinsic function replaced by its local value."""
    if isinstance(value, list):
        return [resolve(item, scope) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            return scope.pseudo(arg)
        if key == "Fn::GetAtt":
            logical, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            if (logical, attribute) not in scope.attrs:
                raise TemplateError(f"{scope.stack}: Fn::GetAtt {logical}.{attribute} is not known here")
            return scope.attrs[(logical, attribute)]
        if key == "Fn::Join":
            separator, items = arg
            return separator.join(str(resolve(item, scope)) for item in items)
        if key == "Fn::Sub":
            template, variables = (arg, {}) if isinstance(arg, str) else arg
            local = {name: str(resolve(v, scope)) for name, v in variables.items()}

            def substitute(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in local:
                    return local[name]
                if "." in name:
                    return str(resolve({"Fn::GetAtt": name.split(".", 1)}, scope))
                return scope.pseudo(name)

            return re.sub(r"\$\{([^}!]+)\}", substitute, template)
        if key == "Fn::ImportValue":
            name = resolve(arg, scope)
            if name not in scope.exports:
                raise TemplateError(f"{scope.stack}: Fn::ImportValue {name}: no stack applied exports it")
            return scope.exports[name]
        if key.startswith("Fn::"):
            raise TemplateError(f"{scope.stack}: the rehearsal cannot resolve {key}")
    return {k: resolve(v, scope) for k, v in value.items()}


@dataclass(frozen=True)
class LocalAssets:
    """Where the rehearsal keeps what AWS keeps in S3 and ECR."""

    assembly: Path
    """The cloud assembly (`cdk.out`): staged file assets are `asset.<hash>` directories there."""
    bucket_root: Path
    """A bucket named B is the directory `bucket_root / B`."""
    images: Mapping[str, str]
    """Image asset hash -> the local tag it was built as."""


@dataclass
class StackResult:
    calls: list[Call] = field(default_factory=list)
    undo: list[Call] = field(default_factory=list)
    unhonoured: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)


# The resource properties the emulator does something with; every other one is listed as unhonoured.
MODEL_HONOURED = {"ExecutionRoleArn", "PrimaryContainer", "ModelName"}
CONTAINER_HONOURED = {"Image", "Environment", "ModelDataSource", "ModelDataUrl"}
VARIANT_HONOURED = {
    "VariantName",
    "ModelName",
    "InstanceType",
    "InitialInstanceCount",
    "InitialVariantWeight",
    "ContainerStartupHealthCheckTimeoutInSeconds",
    "RoutingConfig",
}
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
NOT_RESOURCES = {"AWS::CDK::Metadata"}
SCALING_KEY = ("ResourceId", "ScalableDimension", "ServiceNamespace")
"""What names a scalable target, in the order of CloudFormation's Ref of one."""
SCALING_CONFIGURATIONS = ("TargetTrackingScalingPolicyConfiguration", "StepScalingPolicyConfiguration")


def local_image(uri: str, assets: LocalAssets) -> str:
    """The local tag that stands for an image asset's ECR URI."""
    match = ASSET_URI.search(uri)
    if match is None or match["hash"] not in assets.images:
        raise TemplateError(f"image {uri} is not an image asset of this cloud assembly")
    return assets.images[match["hash"]]


def local_model_uri(uri: str, assets: LocalAssets) -> str:
    """`s3://BUCKET/PREFIX` -> the `file://` URL of the bucket's local directory."""
    if not uri.startswith("s3://"):
        return uri
    return (assets.bucket_root / uri.removeprefix("s3://")).resolve().as_uri() + "/"


def camel(value: Any) -> Any:
    """CloudFormation's PascalCase keys -> the AgentCore API's camelCase (maps of names kept)."""
    if isinstance(value, list):
        return [camel(item) for item in value]
    if isinstance(value, dict):
        return {key[:1].lower() + key[1:]: camel(item) for key, item in value.items()}
    return value


def _ignored(kind: str, logical: str, props: Mapping[str, Any], honoured: set[str]) -> list[str]:
    extra = sorted(set(props) - honoured)
    return [f"{kind} {logical}: not honoured by the emulator: {', '.join(extra)}"] if extra else []


class _Applier:
    def __init__(
        self, stack: str, scope: Scope, assets: LocalAssets, call: Caller, result: StackResult
    ) -> None:
        self.stack, self.scope, self.assets, self.call = stack, scope, assets, call
        self.result = result

    def run(self, c: Call, undo: Call | None = None) -> dict[str, Any]:
        self.result.calls.append(c)
        response = self.call(c)
        if undo is not None:
            self.result.undo.append(undo)
        return response

    def name(self, logical: str, limit: int) -> str:
        """A deterministic physical name, as CloudFormation makes one from the stack and logical id."""
        return f"{self.stack}-{logical}"[:limit].rstrip("-")

    def note(self, line: str) -> None:
        self.result.unhonoured.append(line)

    def resource(self, logical: str, kind: str, raw: Mapping[str, Any]) -> None:
        props = resolve(raw.get("Properties", {}), self.scope)
        refs, attrs = self.scope.refs, self.scope.attrs
        if kind in NOT_RESOURCES:
            return
        if kind == "AWS::IAM::Role":
            name = self.name(logical, 64)
            refs[logical] = name
            attrs[(logical, "Arn")] = f"arn:{self.scope.partition}:iam::{self.scope.account}:role/{name}"
            self.note(f"IAM role {logical}: its ARN is passed on; its trust and policies are not enforced")
        elif kind == "AWS::IAM::Policy":
            self.note(f"IAM policy {logical}: not enforced (the emulator has no IAM)")
        elif kind == "AWS::S3::Bucket":
            name = self.name(logical, 63).lower()
            refs[logical] = name
            attrs[(logical, "Arn")] = f"arn:{self.scope.partition}:s3:::{name}"
            directory = self.assets.bucket_root / name
            self.run(
                Call("local", "make_directory", {"path": str(directory)}),
                Call("local", "remove_directory", {"path": str(directory)}),
            )
            self.note(
                f"S3 bucket {logical}: the directory {directory}; not applied: {', '.join(sorted(props))}"
            )
        elif kind == "AWS::S3::BucketPolicy":
            self.note(f"S3 bucket policy {logical}: not enforced (a local directory has no policy)")
        elif kind == "Custom::CDKBucketDeployment":
            self.bucket_deployment(logical, props)
        elif kind in {"AWS::Lambda::Function", "AWS::Lambda::LayerVersion"}:
            name = self.name(logical, 64)
            refs[logical] = name
            attrs[(logical, "Arn")] = (
                f"arn:{self.scope.partition}:lambda:{self.scope.region}:{self.scope.account}:function:{name}"
            )
            self.note(f"{kind} {logical}: not created (the rehearsal copies the BucketDeployment's files)")
        elif kind == "AWS::SageMaker::Model":
            self.model(logical, props)
        elif kind == "AWS::SageMaker::EndpointConfig":
            self.endpoint_config(logical, props)
        elif kind == "AWS::SageMaker::Endpoint":
            name = props.get("EndpointName") or self.name(logical, 63)
            params = {"EndpointName": name, "EndpointConfigName": props["EndpointConfigName"]}
            self.run(
                Call("sagemaker", "create_endpoint", params),
                Call("sagemaker", "delete_endpoint", {"EndpointName": name}),
            )
            refs[logical] = attrs[(logical, "EndpointName")] = name
            self.result.unhonoured += _ignored(
                "Endpoint", logical, props, {"EndpointName", "EndpointConfigName"}
            )
        elif kind == "AWS::ApplicationAutoScaling::ScalableTarget":
            self.scalable_target(logical, props)
        elif kind == "AWS::ApplicationAutoScaling::ScalingPolicy":
            self.scaling_policy(logical, props)
        elif kind == "AWS::BedrockAgentCore::Runtime":
            self.runtime(logical, props)
        elif kind == "AWS::BedrockAgentCore::RuntimeEndpoint":
            runtime_id = props["AgentRuntimeId"]
            params = {"agentRuntimeId": runtime_id, "name": props["Name"]}
            if props.get("AgentRuntimeVersion"):
                params["agentRuntimeVersion"] = props["AgentRuntimeVersion"]
            self.run(
                Call("bedrock-agentcore-control", "create_agent_runtime_endpoint", params),
                Call(
                    "bedrock-agentcore-control",
                    "delete_agent_runtime_endpoint",
                    {"agentRuntimeId": runtime_id, "endpointName": props["Name"]},
                ),
            )
            refs[logical] = attrs[(logical, "Name")] = props["Name"]
            self.result.unhonoured += _ignored(
                "RuntimeEndpoint", logical, props, {"AgentRuntimeId", "Name", "AgentRuntimeVersion"}
            )
        else:
            raise TemplateError(f"{self.stack}: the rehearsal cannot create {kind} ({logical})")

    def scalable_target(self, logical: str, props: Mapping[str, Any]) -> None:
        key = {name: props[name] for name in SCALING_KEY}
        params = {**key, "MinCapacity": props["MinCapacity"], "MaxCapacity": props["MaxCapacity"]}
        self.run(
            Call("application-autoscaling", "register_scalable_target", params),
            Call("application-autoscaling", "deregister_scalable_target", key),
        )
        # CloudFormation's Ref of a scalable target: "resource id|dimension|namespace".
        self.scope.refs[logical] = "|".join(key[name] for name in SCALING_KEY)
        self.note(
            f"ScalableTarget {logical}: recorded, not applied (the emulator runs the variant's "
            f"InitialInstanceCount; `emulator status` shows {params['MinCapacity']}..{params['MaxCapacity']})"
        )
        self.result.unhonoured += _ignored("ScalableTarget", logical, props, {*params})

    def scaling_policy(self, logical: str, props: Mapping[str, Any]) -> None:
        if "ScalingTargetId" in props:
            key = dict(zip(SCALING_KEY, props["ScalingTargetId"].split("|"), strict=True))
        else:
            key = {name: props[name] for name in SCALING_KEY}
        configured = {name: props[name] for name in SCALING_CONFIGURATIONS if name in props}
        named = {**key, "PolicyName": props["PolicyName"]}
        params = {**named, "PolicyType": props["PolicyType"], **configured}
        self.run(
            Call("application-autoscaling", "put_scaling_policy", params),
            Call("application-autoscaling", "delete_scaling_policy", named),
        )
        self.scope.refs[logical] = props["PolicyName"]
        self.note(f"ScalingPolicy {logical}: recorded, not applied (the emulator does not autoscale)")
        honoured = {*SCALING_KEY, "ScalingTargetId", "PolicyName", "PolicyType", *SCALING_CONFIGURATIONS}
        self.result.unhonoured += _ignored("ScalingPolicy", logical, props, honoured)

    def bucket_deployment(self, logical: str, props: Mapping[str, Any]) -> None:
        target = (
            self.assets.bucket_root
            / props["DestinationBucketName"]
            / props.get("DestinationBucketKeyPrefix", "")
        )
        for key in props["SourceObjectKeys"]:
            staged = self.assets.assembly / f"asset.{key.removesuffix('.zip')}"
            if not staged.is_dir():
                raise TemplateError(
                    f"{self.stack}: {logical}'s source {key} is not staged in {self.assets.assembly}"
                )
            params = {"source": str(staged), "target": str(target), "prune": bool(props.get("Prune", True))}
            self.run(Call("local", "copy_directory", params))
        honoured = {"ServiceToken", "SourceBucketNames", "SourceObjectKeys", "DestinationBucketName"}
        honoured |= {"DestinationBucketKeyPrefix", "Prune"}
        self.result.unhonoured += _ignored("BucketDeployment", logical, props, honoured)

    def model(self, logical: str, props: Mapping[str, Any]) -> None:
        name = props.get("ModelName") or self.name(logical, 63)
        container = dict(props["PrimaryContainer"])
        container["Image"] = local_image(container["Image"], self.assets)
        source = container.get("ModelDataSource", {}).get("S3DataSource")
        if source:
            source["S3Uri"] = local_model_uri(source["S3Uri"], self.assets)
        if "ModelDataUrl" in container:
            container["ModelDataUrl"] = local_model_uri(container["ModelDataUrl"], self.assets)
        params = {
            "ModelName": name,
            "ExecutionRoleArn": props["ExecutionRoleArn"],
            "PrimaryContainer": {k: v for k, v in container.items() if k in CONTAINER_HONOURED},
        }
        self.run(
            Call("sagemaker", "create_model", params),
            Call("sagemaker", "delete_model", {"ModelName": name}),
        )
        self.scope.refs[logical] = self.scope.attrs[(logical, "ModelName")] = name
        self.result.unhonoured += _ignored("Model", logical, props, MODEL_HONOURED)
        self.result.unhonoured += _ignored("Model container", logical, container, CONTAINER_HONOURED)

    def endpoint_config(self, logical: str, props: Mapping[str, Any]) -> None:
        name = props.get("EndpointConfigName") or self.name(logical, 63)
        variants = props["ProductionVariants"]
        # Sent whole, so that DescribeEndpointConfig shows the template's values; listed when not honoured.
        params = {"EndpointConfigName": name, "ProductionVariants": variants}
        self.run(
            Call("sagemaker", "create_endpoint_config", params),
            Call("sagemaker", "delete_endpoint_config", {"EndpointConfigName": name}),
        )
        self.scope.refs[logical] = self.scope.attrs[(logical, "EndpointConfigName")] = name
        self.result.unhonoured += _ignored(
            "EndpointConfig", logical, props, {"EndpointConfigName", "ProductionVariants"}
        )
        for variant in variants:
            self.result.unhonoured += _ignored(
                "Variant", variant.get("VariantName", "?"), variant, VARIANT_HONOURED
            )

    def runtime(self, logical: str, props: Mapping[str, Any]) -> None:
        artifact = camel(props["AgentRuntimeArtifact"])
        container = artifact["containerConfiguration"]
        container["containerUri"] = local_image(container["containerUri"], self.assets)
        params: dict[str, Any] = {
            "agentRuntimeName": props["AgentRuntimeName"],
            "agentRuntimeArtifact": artifact,
            "roleArn": props["RoleArn"],
            "networkConfiguration": camel(props.get("NetworkConfiguration") or {"NetworkMode": "PUBLIC"}),
            "environmentVariables": dict(props.get("EnvironmentVariables") or {}),
            "tags": {**(props.get("Tags") or {}), STACK_TAG: self.stack},
        }
        if props.get("ProtocolConfiguration"):
            params["protocolConfiguration"] = {"serverProtocol": props["ProtocolConfiguration"]}
        if props.get("Description"):
            params["description"] = props["Description"]
        response = self.run(Call("bedrock-agentcore-control", "create_agent_runtime", params))
        runtime_id = response["agentRuntimeId"]
        self.result.undo.append(
            Call("bedrock-agentcore-control", "delete_agent_runtime", {"agentRuntimeId": runtime_id})
        )
        attrs = self.scope.attrs
        self.scope.refs[logical] = attrs[(logical, "AgentRuntimeId")] = runtime_id
        attrs[(logical, "AgentRuntimeArn")] = response["agentRuntimeArn"]
        attrs[(logical, "AgentRuntimeVersion")] = str(response.get("agentRuntimeVersion", "1"))
        self.result.unhonoured += _ignored(
            "Runtime", logical, {k: v for k, v in props.items() if v}, RUNTIME_HONOURED
        )


def _references(value: Any) -> set[str]:
    """The logical ids `value` names (Ref, Fn::GetAtt, and `${X}` / `${X.Attr}` in Fn::Sub)."""
    if isinstance(value, list):
        return set().union(*(_references(item) for item in value))
    if not isinstance(value, dict):
        return set()
    found: set[str] = set()
    for key, arg in value.items():
        if key == "Ref" and isinstance(arg, str):
            found.add(arg)
        elif key == "Fn::GetAtt":
            found.add(arg[0] if isinstance(arg, list) else arg.split(".", 1)[0])
        elif key == "Fn::Sub":
            text = arg if isinstance(arg, str) else arg[0]
            found |= {name.split(".", 1)[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
            found |= _references(arg[1:] if isinstance(arg, list) else [])
        else:
            found |= _references(arg)
    return found


def creation_order(resources: Mapping[str, Any]) -> list[str]:
    """Logical ids, each after what it references or `DependsOn` (template order otherwise), as
    CloudFormation creates them."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(logical: str) -> None:
        if logical in order:
            return
        if logical in visiting:
            raise TemplateError(f"circular reference through {logical}")
        visiting.add(logical)
        raw = resources[logical]
        depends = raw.get("DependsOn", [])
        for name in sorted(
            _references(raw.get("Properties", {})) | set([depends] if isinstance(depends, str) else depends)
        ):
            if name in resources:
                visit(name)
        visiting.discard(logical)
        order.append(logical)

    for logical in resources:
        visit(logical)
    return order


def apply_stack(
    stack: str,
    template: Mapping[str, Any],
    scope: Scope,
    assets: LocalAssets,
    call: Caller,
    result: StackResult | None = None,
) -> StackResult:
    """Create `stack`'s resources through `call`, in template order; its outputs and exports join `scope`.

    `result` (a new one by default) fills as it goes, so a failure half-way still says what to undo."""
    scope.stack = stack
    scope.refs, scope.attrs = {}, {}
    applier = _Applier(stack, scope, assets, call, result if result is not None else StackResult())
    resources = template.get("Resources", {})
    for logical in creation_order(resources):
        applier.resource(logical, resources[logical]["Type"], resources[logical])
    for name, output in template.get("Outputs", {}).items():
        value = str(resolve(output["Value"], scope))
        applier.result.outputs[name] = value
        export = output.get("Export", {}).get("Name")
        if export:
            scope.exports[resolve(export, scope)] = value
    return applier.result


def copy_directory(source: Path, target: Path, prune: bool) -> None:
    """The BucketDeployment's upload, locally: `source`'s files under `target` (`prune`: nothing else)."""
    if prune and target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, dirs_exist_ok=True)
