"""`--target local`: the `Toolkit` (deploy/toolkit.py) that hands the synthesized template to the
emulator's CloudFormation, in the place of `CdkToolkit`'s `cdk deploy`:

- `synth` is `CdkToolkit.synth`: the same stacks, in the same cloud assembly.
- `deploy(stacks)` calls the emulator's `CreateStack` per stack with boto3's `cloudformation` client,
  tagged `emulator:build-platform=engine` with `--host-platform` (the emulator's own tag, its README
  says: the images built for its Docker engine's platform, not the agent's linux/arm64),
  the template given as `TemplateURL=file://<assembly>/<stack>.template.json`: the cloud assembly on
  this machine stands for what the CDK toolkit uploads to S3 and ECR (the emulator builds the image
  assets from `<stack>.assets.json` and copies the staged file assets). Then boto3's
  `stack_create_complete` waiter, and the stack's events: every line the emulator noted (what it does
  not honour, what it records without creating) is printed; a failed stack is a `RehearsalError`
  naming the failed resources and their reasons (the emulator has rolled it back).
- `destroy` deletes the stacks through CloudFormation as on AWS (deploy/teardown.py), then says what
  the stacks kept (`DeletionPolicy: Retain`, DELETE_SKIPPED in their events).

The emulator holds every stack's state (`python -m emulator status` shows it), so nothing is recorded
here. The clients reach the emulator through its variables (boto3's `AWS_ENDPOINT_URL_<SERVICE>`,
region and credentials, given to boto3 explicitly: `Aws.from_variables`): the ones already in the
environment (`eval "$(python -m emulator env)"`, an emulator started with `--home H` included), else
what `python -m emulator env --json` prints. The prerequisites are the emulator's identity (its STS),
as there is no CDK bootstrap or CLI to check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from deploy.aws import Aws, endpoint_variable
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.errors import DeployError
from deploy.parts.base import Identity, Part
from deploy.prereqs import require_identity
from deploy.teardown import delete_stacks

EMULATOR_COMMAND = (sys.executable, "-m", "emulator")
START_HINT = "start one: python -m emulator up --runtime docker --detach -f compose/empty.yaml"
SERVICES = ("sts", "cloudformation", "sagemaker", "application-autoscaling", "bedrock-agentcore-control")
"""The services the local deploy calls: with all their endpoints in the environment, it uses those."""
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
"""What `cdk deploy` acknowledges for a stack with IAM resources."""
QUIET = {None, "", "User Initiated"}

Echo = Callable[[str], None]


BUILD_ON_ENGINE = {"Key": "emulator:build-platform", "Value": "engine"}
"""The stack tag with which the emulator's CloudFormation builds a stack's image assets for its Docker
engine's own platform instead of the one each names (emulator/README.md, "linux/arm64"): what AWS does
not have, so the emulator names it, and tests/deploy/test_local_target.py holds the two to one text."""


class RehearsalError(DeployError):
    """The local deploy cannot go on (no emulator, a stack the emulator could not create)."""


def emulator_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that point boto3 at the running emulator: the environment's, when it names every
    service the local deploy calls, else `python -m emulator env --json`'s (EMULATOR_HOME finds the
    emulator's home)."""
    environ = os.environ if environ is None else environ
    if all(environ.get(endpoint_variable(service)) for service in SERVICES):
        return dict(environ)
    result = subprocess.run([*EMULATOR_COMMAND, "env", "--json"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no answer"])[-1]
        raise RehearsalError(f"no emulator to rehearse on ({reason}); {START_HINT}")
    return json.loads(result.stdout)


def stack_events(cloudformation: Any, stack: str) -> list[dict[str, Any]]:
    """The stack's events, oldest first (`stack` a name, or the StackId of a deleted one)."""
    events = cloudformation.describe_stack_events(StackName=stack)["StackEvents"]
    return list(reversed(events))


class LocalToolkit:
    def __init__(self, config: DeployConfig, aws: Aws, echo: Echo = print):
        self.config = config
        self.aws = aws
        self.echo = echo

    def check(self, config: DeployConfig, aws: Aws, parts: Sequence[Part]) -> Identity:
        """The prerequisite of a local deploy: an emulator that answers (its STS)."""
        return require_identity(aws)

    def synth(self, parts: Sequence[Part]) -> Path:
        return CdkToolkit(self.config).synth(parts)

    def deploy(self, stacks: Sequence[str]) -> None:
        cloudformation = self.aws.client("cloudformation")
        tags = []
        if self.config.host_platform:
            tags = [BUILD_ON_ENGINE]
            self.echo(
                "--host-platform: the emulator builds the images for its own platform, not the agent's "
                "linux/arm64 (faster; AgentCore runs only arm64)"
            )
        for stack in stacks:
            url = (self.config.outdir / f"{stack}.template.json").resolve().as_uri()
            try:
                cloudformation.create_stack(
                    StackName=stack, TemplateURL=url, Capabilities=CAPABILITIES, Tags=tags
                )
            except ClientError as exc:
                error = exc.response["Error"]
                if error["Code"] == "AlreadyExistsException":
                    raise RehearsalError(
                        f"{stack} already exists on the emulator; `destroy --target local` first"
                    ) from exc
                raise RehearsalError(f"{stack}: CreateStack: {error['Code']}: {error['Message']}") from exc
            self.echo(f"{stack}: creating on the emulator (its events follow when it is done)")
            waiter = {"Delay": self.config.wait_delay_s, "MaxAttempts": self.config.wait_attempts}
            failed: WaiterError | None = None
            try:
                cloudformation.get_waiter("stack_create_complete").wait(StackName=stack, WaiterConfig=waiter)
            except WaiterError as exc:
                failed = exc
            events = stack_events(cloudformation, stack)
            for event in events:
                reason = event.get("ResourceStatusReason")
                if reason not in QUIET:
                    self.echo(f"{stack}: {event['LogicalResourceId']} {event['ResourceStatus']}: {reason}")
            if failed is not None:
                reasons = [
                    f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', '')}"
                    for e in events
                    if e["ResourceStatus"] == "CREATE_FAILED"
                ] or [str(failed)]
                raise RehearsalError(
                    f"{stack} was not created ({'; '.join(reasons)}); its events are above, and "
                    "`destroy --target local` deletes what is left of it"
                )
            (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
            for output in described.get("Outputs", []):
                if not output["OutputKey"].startswith("ExportsOutput"):  # CDK's cross-stack exports
                    self.echo(f"{stack}: output {output['OutputKey']} = {output['OutputValue']}")

    def destroy(self, parts: Sequence[Part], aws: Aws, identity: Identity, echo: Echo) -> str:
        """Delete the stacks of `parts` through the emulator's CloudFormation; the line saying what
        the stacks kept."""
        deleted = delete_stacks(self.config, parts, aws, echo)
        cloudformation = aws.client("cloudformation")
        kept = [
            f"- {stack}: {e['LogicalResourceId']} ({e['ResourceType']} {e.get('PhysicalResourceId', '')})"
            for stack, described in deleted.items()
            for e in stack_events(cloudformation, described["StackId"])
            if e["ResourceStatus"] == "DELETE_SKIPPED"
        ]
        if not kept:
            return "emulator: nothing left (the stacks, their containers and image tags are gone)"
        return "\n".join(
            [
                "emulator: the stacks are gone; kept on purpose (DeletionPolicy: Retain; a bucket is the "
                "directory buckets/<name> in the emulator's home):",
                *kept,
            ]
        )
