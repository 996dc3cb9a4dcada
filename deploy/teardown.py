"""Destroy: delete the stacks in reverse deploy order through CloudFormation, then say plainly what
is left on purpose (the S3 model cache, the images in ECR, the log groups) and how to delete it.

It needs only the stack names, not a synthesized app, so it works from any checkout and without the
CDK installed. Stack outputs are read before deletion to name the bucket and images exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import ConfigError, TeardownFailed
from deploy.images import assets_repository, parse_ecr_uri
from deploy.parts.base import Identity, Part


def described_stack(cloudformation: Any, name: str) -> dict[str, Any] | None:
    """The stack as DescribeStacks answers (StackId, Outputs, ...), or None when no such stack exists."""
    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in str(exc):
            return None
        raise
    return stacks[0]


def outputs_of(stack: dict[str, Any]) -> dict[str, str]:
    return {output["OutputKey"]: output["OutputValue"] for output in stack.get("Outputs", [])}


def delete_stack(cloudformation: Any, name: str, *, delay_s: float, attempts: int) -> None:
    cloudformation.delete_stack(StackName=name)
    try:
        cloudformation.get_waiter("stack_delete_complete").wait(
            StackName=name, WaiterConfig={"Delay": delay_s, "MaxAttempts": attempts}
        )
    except WaiterError as exc:
        stacks = exc.last_response.get("Stacks") or [{}]
        reason = stacks[0].get("StackStatusReason") or stacks[0].get("StackStatus") or str(exc)
        raise TeardownFailed(
            f"stack {name} was not deleted: {reason}; see its events in the CloudFormation console"
        ) from exc


def delete_stacks(
    config: DeployConfig, parts: Sequence[Part], aws: Aws, echo: Callable[[str], None] = print
) -> dict[str, dict[str, Any]]:
    """Delete every stack of `parts`, last deployed first; each deleted stack as it was described."""
    cloudformation = aws.client("cloudformation")
    deleted: dict[str, dict[str, Any]] = {}
    for part in reversed(parts):
        for name in reversed(part.stacks):
            found = described_stack(cloudformation, name)
            if found is None:
                echo(f"{name}: not deployed, nothing to delete")
                continue
            deleted[name] = found
            echo(f"{name}: deleting")
            delete_stack(cloudformation, name, delay_s=config.wait_delay_s, attempts=config.wait_attempts)
            echo(f"{name}: deleted")
    return deleted


def destroy(
    config: DeployConfig,
    parts: Sequence[Part],
    aws: Aws,
    identity: Identity,
    echo: Callable[[str], None] = print,
) -> str:
    """Delete every stack of `parts`, last deployed first; returns the notice of what was retained."""
    deleted = delete_stacks(config, parts, aws, echo)
    outputs = {name: outputs_of(stack) for name, stack in deleted.items()}
    return retention_notice(config, parts, identity, outputs)


def image_lines(image_uri: str | None, identity: Identity, what: str) -> list[str]:
    region = identity.region
    cdk_repository = assets_repository(identity.account, region)
    try:
        image = parse_ecr_uri(image_uri or "")
    except ConfigError:
        return [
            f"- ECR: the {what} image in repository {cdk_repository} (CDK's image-asset repository).",
            f"    list: aws ecr list-images --repository-name {cdk_repository} --region {region}",
        ]
    tag = image.uri.rsplit("@", 1)[1] if "@" in image.uri else image.uri.rsplit(":", 1)[1]
    image_id = f"imageDigest={tag}" if tag.startswith("sha256:") else f"imageTag={tag}"
    lines = [
        f"- ECR: the {what} image {image.uri}",
        f"    delete: aws ecr batch-delete-image --repository-name {image.repository} "
        f"--image-ids {image_id} --region {image.region}",
    ]
    if image.repository == cdk_repository:
        lines.append(
            f"    the repository {image.repository} itself belongs to the CDK bootstrap (stack "
            "CDKToolkit) and is shared by every CDK app here; it goes with "
            "`aws cloudformation delete-stack --stack-name CDKToolkit` once nothing needs it (empty it first)"
        )
    else:
        lines.append(
            f"    the repository is yours (given as an image URI): aws ecr delete-repository "
            f"--repository-name {image.repository} --force --region {image.region}"
        )
    return lines


def retention_notice(
    config: DeployConfig, parts: Sequence[Part], identity: Identity, outputs: dict[str, dict[str, str]]
) -> str:
    lines = ["Retained on purpose (destroy does not delete these; they cost little, but not nothing):"]
    for part in parts:
        lines += part.retained(identity, outputs)
    return "\n".join(lines)
