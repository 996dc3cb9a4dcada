"""CloudFormation's operations: stacks made from a template by the other services, with their events.

- `CreateStack` takes the template as `TemplateBody` (JSON) or as `TemplateURL=file://<assembly>/
  <stack>.template.json`, the CDK's cloud assembly on this machine standing for what the CDK toolkit
  uploads to S3 and ECR: beside the template, `<stack>.assets.json` names the image assets (each built
  from its Dockerfile and build arguments by the emulator's image builder, `ImageAssets`, as the local
  tag that stands for its ECR URI) and the staged file assets (`asset.<hash>` directories, which a
  BucketDeployment copies).
  It answers at once (`CREATE_IN_PROGRESS`); the stack is made in the background, resource by
  resource in dependency order (template.py), each through the resource-type table (resources.py),
  each step a stack event. A resource that fails is `CREATE_FAILED` with the reason; what was made is
  deleted again, newest first (`ROLLBACK_COMPLETE`), unless `DisableRollback` / `OnFailure=DO_NOTHING`.
- `DeleteStack` deletes what the stack made, newest first (waiting until an endpoint's or a runtime's
  containers are gone), keeps what says `DeletionPolicy: Retain` (`DELETE_SKIPPED`), removes the image
  tags it built, and leaves the stack listed as `DELETE_COMPLETE` (described by its StackId, as on AWS).
- `DescribeStacks`, `DescribeStackEvents` (newest first), `DescribeStackResources`,
  `ListStackResources`, `ListStacks`, `GetTemplate` read the store. UpdateStack is not emulated.
- The agent runtimes a manifest tags `aws:cloudformation:stack-name: <stack>` (the default manifest's
  `voice_agent` is the deploy's `VoiceAgent-Runtime`) form a stack too, with the runtime stack's
  outputs; deleting it deletes them through AgentCore.

The state lives in the store (`Store.stacks`), so `emulator status` shows the stacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from emulator.config import EmulatorConfig
from emulator.controller.paths import within
from emulator.controller.store import AgentRuntime, Stack, StackEvent, StackResource, Store
from emulator.services.cloudformation.errors import already_exists, no_such_stack, validation
from emulator.services.cloudformation.resources import (
    RESOURCE_TYPES,
    STACK_TAG,
    Context,
    ResourceType,
    Undo,
)
from emulator.services.cloudformation.template import (
    Scope,
    TemplateError,
    condition,
    creation_order,
    parse,
    resolve,
)
from emulator.wire.awserrors import AwsError
from emulator.wire.awsjson import Operation

logger = logging.getLogger("emulator.cloudformation")

GONE = {"ValidationException", "ResourceNotFoundException", "ObjectNotFoundException", "ResourceNotFound"}
"""What the services answer for what no longer exists (SageMaker, AgentCore, autoscaling, CloudWatch)."""
GONE_POLL_S = 0.5
GONE_TIMEOUT_S = 600.0
"""How long a deleted endpoint or runtime may take to stop its containers: the deploy's own default wait."""
ENDED = {"DELETE_COMPLETE"}
CREATE_FAILURE = "The following resource(s) failed to create: [{}]."
ROLLBACK = " Rollback requested by user."


class Peers(Protocol):
    """The other services, as emulator/server/app.py wires them (`Services`)."""

    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def offers(self, service: str) -> bool: ...


@dataclass(frozen=True)
class ImageAsset:
    """One image asset that `<stack>.assets.json` names: its Dockerfile (in the repository, the build
    context), its hash, and its build arguments (the CDK's `dockerBuildArgs`)."""

    dockerfile: str
    hash: str
    build_args: Mapping[str, str]


class ImageAssets(Protocol):
    """Builds a stack's image assets as local tags, and removes them with the stack (a thread runs it)."""

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> str: ...

    def remove(self, tag: str) -> bool: ...


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat(timespec="milliseconds")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, AwsError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, KeyError):
        return f"Properties validation failed: required property {exc.args[0]} is missing"
    return str(exc) or repr(exc)


class CloudFormationControl:
    def __init__(self, config: EmulatorConfig, store: Store, peers: Peers, images: ImageAssets) -> None:
        self.config = config
        self.store = store
        self.peers = peers
        self.images = images
        self.buckets = config.home_dir / "buckets"

    def operations(self) -> dict[str, Operation]:
        return {
            name: getattr(self, name)
            for name in (
                "CreateStack",
                "DescribeStacks",
                "DescribeStackEvents",
                "DescribeStackResources",
                "ListStackResources",
                "ListStacks",
                "GetTemplate",
                "DeleteStack",
            )
        }

    # -- reading

    def _name(self, body: dict[str, Any]) -> str:
        name = body.get("StackName")
        if not isinstance(name, str) or not name:
            raise validation("StackName is required")
        return name

    def find(self, name: str) -> Stack | None:
        """The live stack of that name, or the stack (deleted ones too) of that StackId."""
        if name in self.store.stacks:
            return self.store.stacks[name]
        live = [s for s in self.store.stacks.values() if s.name == name and s.status not in ENDED]
        return live[0] if live else None

    def _stack(self, body: dict[str, Any]) -> Stack:
        name = self._name(body)
        stack = self.find(name)
        if stack is None:
            raise no_such_stack(name)
        return stack

    def stack_runtimes(self, stack: str) -> list[AgentRuntime]:
        return [
            rt
            for rt in self.store.agent_runtimes.values()
            if (rt.request.get("tags") or {}).get(STACK_TAG) == stack
        ]

    def _view(self, stack: Stack) -> dict[str, Any]:
        return {
            "StackName": stack.name,
            "StackId": stack.id,
            "CreationTime": _iso(stack.created),
            "DeletionTime": _iso(stack.deleted) if stack.deleted else None,
            "StackStatus": stack.status,
            "StackStatusReason": stack.reason,
            "DisableRollback": stack.disable_rollback,
            "Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in stack.parameters.items()],
            "Outputs": [
                {"OutputKey": key, "OutputValue": value, "ExportName": export}
                for key, (value, export) in stack.outputs.items()
            ],
            "Tags": [{"Key": k, "Value": v} for k, v in stack.tags.items()],
        }

    def _manifest_view(self, name: str, runtimes: list[AgentRuntime]) -> dict[str, Any]:
        """The stack a manifest's tagged runtimes form, with the outputs the runtime stack declares."""
        region, account = self.config.region, self.config.account_id
        deleting = any(rt.status == "DELETING" for rt in runtimes)
        outputs = [{"OutputKey": key, "OutputValue": value} for key, value in _outputs(runtimes[0]).items()]
        return {
            "StackName": name,
            "StackId": f"arn:aws:cloudformation:{region}:{account}:stack/{name}/{runtimes[0].id}",
            "CreationTime": _iso(min(rt.created for rt in runtimes)),
            "StackStatus": "DELETE_IN_PROGRESS" if deleting else "CREATE_COMPLETE",
            "Outputs": outputs,
        }

    def DescribeStacks(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("StackName"):
            live = [self._view(s) for s in self.store.stacks.values() if s.status not in ENDED]
            return {"Stacks": live}
        name = self._name(body)
        stack = self.find(name)
        if stack is not None:
            return {"Stacks": [self._view(stack)]}
        runtimes = self.stack_runtimes(name)
        if not runtimes:
            raise no_such_stack(name)
        return {"Stacks": [self._manifest_view(name, runtimes)]}

    def DescribeStackEvents(self, body: dict[str, Any]) -> dict[str, Any]:
        stack = self._stack(body)
        events = [
            {
                "StackId": stack.id,
                "StackName": stack.name,
                "EventId": event.id,
                "LogicalResourceId": event.logical_id,
                "PhysicalResourceId": event.physical_id,
                "ResourceType": event.type,
                "Timestamp": _iso(event.time),
                "ResourceStatus": event.status,
                "ResourceStatusReason": event.reason,
            }
            for event in reversed(stack.events)
        ]
        return {"StackEvents": events}

    def _resource_view(self, resource: StackResource) -> dict[str, Any]:
        return {
            "LogicalResourceId": resource.logical_id,
            "PhysicalResourceId": resource.physical_id or None,
            "ResourceType": resource.type,
            "ResourceStatus": resource.status,
            "ResourceStatusReason": resource.reason,
        }

    def DescribeStackResources(self, body: dict[str, Any]) -> dict[str, Any]:
        stack = self._stack(body)
        views = [
            {
                "StackName": stack.name,
                "StackId": stack.id,
                "Timestamp": _iso(r.updated),
                **self._resource_view(r),
            }
            for r in stack.resources.values()
            if body.get("LogicalResourceId") in (None, r.logical_id)
        ]
        return {"StackResources": views}

    def ListStackResources(self, body: dict[str, Any]) -> dict[str, Any]:
        stack = self._stack(body)
        views = [
            {"LastUpdatedTimestamp": _iso(r.updated), **self._resource_view(r)}
            for r in stack.resources.values()
        ]
        return {"StackResourceSummaries": views}

    def ListStacks(self, body: dict[str, Any]) -> dict[str, Any]:
        wanted = set(body.get("StackStatusFilter") or [])
        summaries = [
            {
                "StackId": s.id,
                "StackName": s.name,
                "CreationTime": _iso(s.created),
                "DeletionTime": _iso(s.deleted) if s.deleted else None,
                "StackStatus": s.status,
                "StackStatusReason": s.reason,
            }
            for s in reversed(self.store.stacks.values())
            if not wanted or s.status in wanted
        ]
        return {"StackSummaries": summaries}

    def GetTemplate(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"TemplateBody": json.dumps(self._stack(body).template)}

    # -- creating

    def _template(self, body: dict[str, Any]) -> tuple[dict[str, Any], Path | None]:
        if body.get("TemplateBody"):
            text, assembly = str(body["TemplateBody"]), None
        elif body.get("TemplateURL"):
            url = urlparse(str(body["TemplateURL"]))
            if url.scheme != "file":
                raise validation(
                    "TemplateURL must be the file:// URL of a template on this machine (S3 is not emulated)"
                )
            path = Path(unquote(url.path))
            try:
                text = path.read_text()
            except OSError as exc:
                raise validation(f"TemplateURL {body['TemplateURL']} cannot be read: {exc.strerror}") from exc
            assembly = path
        else:
            raise validation("Either Template URL or Template Body must be specified.")
        try:
            return parse(text), assembly
        except TemplateError as exc:
            raise validation(str(exc)) from exc

    def _parameters(self, template: dict[str, Any], body: dict[str, Any]) -> dict[str, str]:
        declared = template.get("Parameters") or {}
        given = {
            str(p.get("ParameterKey")): str(p.get("ParameterValue", "")) for p in body.get("Parameters") or []
        }
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise validation(f"Parameters: {unknown} do not exist in the template")
        values = {name: given.get(name, spec.get("Default")) for name, spec in declared.items()}
        missing = sorted(name for name, value in values.items() if value is None)
        if missing:
            raise validation(f"Parameters: {missing} must have values")
        return {name: str(value) for name, value in values.items()}

    def exports(self) -> dict[str, str]:
        return {
            export: value
            for stack in self.store.stacks.values()
            if stack.status not in ENDED
            for value, export in stack.outputs.values()
            if export
        }

    def CreateStack(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name(body)
        if self.find(name) is not None or self.stack_runtimes(name):
            raise already_exists(name)
        template, template_path = self._template(body)
        parameters = self._parameters(template, body)
        region, account = self.config.region, self.config.account_id
        stack = Stack(
            name=name,
            id=f"arn:aws:cloudformation:{region}:{account}:stack/{name}/{uuid.uuid4()}",
            template=template,
            parameters=parameters,
            disable_rollback=str(body.get("DisableRollback", "")).lower() == "true"
            or body.get("OnFailure") == "DO_NOTHING",
            tags={str(t.get("Key")): str(t.get("Value", "")) for t in body.get("Tags") or []},
        )
        self.store.stacks[stack.id] = stack
        self._event(stack, None, "CREATE_IN_PROGRESS", "User Initiated")
        stack.task = asyncio.get_running_loop().create_task(self._create(stack, template_path))
        return {"StackId": stack.id}

    def _event(self, stack: Stack, resource: StackResource | None, status: str, reason: str | None) -> None:
        if resource is None:
            stack.status, stack.reason = status, reason
            logical, physical, kind = stack.name, stack.id, "AWS::CloudFormation::Stack"
        else:
            resource.status, resource.reason, resource.updated = status, reason, time.time()
            logical, physical, kind = resource.logical_id, resource.physical_id, resource.type
        stack.events.append(StackEvent(str(uuid.uuid4()), logical, physical, kind, status, reason))
        self.store.events.add(
            "Warning" if status.endswith("FAILED") else "Normal",
            status,
            f"stack/{stack.name}/{logical}",
            reason or "",
        )

    async def _publish(self, stack: Stack, template_path: Path | None) -> dict[str, str]:
        """Build the stack's image assets (named in `<stack>.assets.json` beside the template)."""
        if template_path is None:
            return {}
        manifest = template_path.with_name(template_path.name.replace(".template.json", ".assets.json"))
        if not manifest.is_file():
            return {}
        images = json.loads(manifest.read_text()).get("dockerImages", {})
        tags = {}
        for asset_hash, image in images.items():
            source = image["source"]
            dockerfile = source.get("dockerFile", "Dockerfile")
            build_args = source.get("dockerBuildArgs") or {}
            if not isinstance(build_args, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in build_args.items()
            ):
                raise TemplateError(f"{dockerfile}: dockerBuildArgs must map names to strings")
            if source.get("platform"):
                self._event(
                    stack,
                    None,
                    "CREATE_IN_PROGRESS",
                    f"the image of {dockerfile} is {source['platform']} on AWS; the emulator builds and runs "
                    "a build for its own Docker engine's platform instead",
                )

            def progress(line: str) -> None:
                logger.info("%s: %s", stack.name, line)

            asset = ImageAsset(dockerfile, asset_hash, build_args)
            tags[asset_hash] = await asyncio.to_thread(self.images.build, asset, progress)
            stack.images.append(tags[asset_hash])
            self._event(
                stack, None, "CREATE_IN_PROGRESS", f"image asset {asset_hash[:12]} is {tags[asset_hash]}"
            )
        return tags

    async def _create(self, stack: Stack, template_path: Path | None) -> None:
        template = stack.template
        resources: dict[str, Any] = template["Resources"]
        scope = Scope(
            self.config.account_id,
            self.config.region,
            stack.name,
            stack.id,
            parameters=dict(stack.parameters),
            exports=self.exports(),
            conditions=template.get("Conditions") or {},
        )
        if template.get("Rules"):
            rules = ", ".join(sorted(template["Rules"]))
            self._event(stack, None, "CREATE_IN_PROGRESS", f"Rules not evaluated by the emulator: {rules}")
        failed: StackResource | None = None
        try:
            images = await self._publish(stack, template_path)
            assembly = template_path.parent if template_path else None
            context = Context(scope, self.peers.call, self.peers.offers, images, assembly, self.buckets)
            for logical in creation_order(resources):
                raw = resources[logical]
                if raw.get("Condition") and not condition(raw["Condition"], scope):
                    continue
                resource = stack.resources[logical] = StackResource(logical, raw["Type"])
                resource.retain = raw.get("DeletionPolicy") == "Retain"
                self._event(stack, resource, "CREATE_IN_PROGRESS", None)
                try:
                    await self._make(stack, context, resource, raw)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a resource's failure is its event, never the emulator's
                    if not isinstance(exc, AwsError | TemplateError | KeyError | OSError):
                        logger.exception("stack %s: creating %s failed", stack.name, logical)
                    failed = resource
                    self._event(stack, resource, "CREATE_FAILED", _reason(exc))
                    break
            if failed is None:
                for key, output in (template.get("Outputs") or {}).items():
                    if output.get("Condition") and not condition(output["Condition"], scope):
                        continue
                    export = output.get("Export", {}).get("Name")
                    stack.outputs[key] = (
                        str(resolve(output["Value"], scope)),
                        resolve(export, scope) if export else None,
                    )
        except TemplateError as exc:
            self._event(stack, None, "CREATE_FAILED", str(exc))
            failed = StackResource(stack.name, "AWS::CloudFormation::Stack")
        except Exception as exc:
            logger.exception("stack %s failed", stack.name)
            self._event(stack, None, "CREATE_FAILED", _reason(exc))
            failed = StackResource(stack.name, "AWS::CloudFormation::Stack")
        if failed is None:
            self._event(stack, None, "CREATE_COMPLETE", None)
            return
        if stack.disable_rollback:
            self._event(stack, None, "CREATE_FAILED", CREATE_FAILURE.format(failed.logical_id))
            return
        self._event(stack, None, "ROLLBACK_IN_PROGRESS", CREATE_FAILURE.format(failed.logical_id) + ROLLBACK)
        left = await self._delete_resources(stack)
        self._event(stack, None, "ROLLBACK_COMPLETE" if left is None else "ROLLBACK_FAILED", left)

    async def _make(
        self, stack: Stack, context: Context, resource: StackResource, raw: dict[str, Any]
    ) -> None:
        kind: ResourceType | None = RESOURCE_TYPES.get(resource.type)
        if kind is None:
            raise TemplateError(f"{resource.type} is not a resource type the emulator creates")
        props = resolve(raw.get("Properties") or {}, context.scope)
        if kind.blocking:
            made = await asyncio.to_thread(kind.create, context, resource.logical_id, props)
        else:
            made = kind.create(context, resource.logical_id, props)
        resource.physical_id, resource.undo = made.physical_id, made.undo
        context.scope.refs[resource.logical_id] = made.physical_id
        for attribute, value in made.attrs.items():
            context.scope.attrs[(resource.logical_id, attribute)] = value
        self._event(stack, resource, "CREATE_COMPLETE", made.note)

    # -- deleting

    def DeleteStack(self, body: dict[str, Any]) -> dict[str, Any]:
        """Deleting a stack that does not exist succeeds, as on AWS."""
        name = self._name(body)
        stack = self.find(name)
        if stack is None:
            for runtime in self.stack_runtimes(name):
                self.peers.call(
                    "bedrock-agentcore-control", "DeleteAgentRuntime", {"agentRuntimeId": runtime.id}
                )
            return {}
        if stack.status in ENDED or stack.status == "DELETE_IN_PROGRESS":
            return {}
        previous = stack.task
        if previous is not None and not previous.done():
            previous.cancel()
        self._event(stack, None, "DELETE_IN_PROGRESS", "User Initiated")
        stack.task = asyncio.get_running_loop().create_task(self._delete(stack, previous))
        return {}

    async def _delete(self, stack: Stack, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await previous
            stack.status = "DELETE_IN_PROGRESS"
        left = await self._delete_resources(stack)
        for tag in stack.images:
            if not await asyncio.to_thread(self.images.remove, tag):
                left = left or f"the image {tag} could not be removed (a container still uses it?)"
        if left is not None:
            self._event(stack, None, "DELETE_FAILED", left)
            return
        stack.deleted = time.time()
        self._event(stack, None, "DELETE_COMPLETE", None)

    async def _delete_resources(self, stack: Stack) -> str | None:
        """Delete the stack's resources newest first; None, or why one could not be deleted."""
        for resource in reversed(stack.resources.values()):
            if resource.status in {"DELETE_COMPLETE", "DELETE_SKIPPED"}:
                continue
            if resource.retain and resource.status == "CREATE_COMPLETE":
                self._event(stack, resource, "DELETE_SKIPPED", "DeletionPolicy Retain: left in place")
                continue
            self._event(stack, resource, "DELETE_IN_PROGRESS", None)
            try:
                for step in resource.undo:
                    await self._undo(step)
            except (AwsError, TimeoutError, OSError) as exc:
                reason = _reason(exc)
                self._event(stack, resource, "DELETE_FAILED", reason)
                return f"The following resource(s) failed to delete: [{resource.logical_id}]: {reason}"
            self._event(stack, resource, "DELETE_COMPLETE", None)
        return None

    async def _undo(self, step: Undo) -> None:
        if step.call is not None:
            try:
                self.peers.call(step.call.service, step.call.operation, step.call.body)
            except AwsError as exc:
                if exc.code not in GONE:
                    raise
        if step.gone_when is not None:
            probe = step.gone_when
            deadline = time.monotonic() + GONE_TIMEOUT_S
            while True:
                try:
                    self.peers.call(probe.service, probe.operation, probe.body)
                except AwsError as exc:
                    if exc.code in GONE:
                        break
                    raise
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{probe.body} still there after {GONE_TIMEOUT_S:g} s")
                await asyncio.sleep(GONE_POLL_S)
        if step.directory is not None:
            await asyncio.to_thread(self._remove_bucket_directory, step.directory)

    def _remove_bucket_directory(self, directory: Path) -> None:
        """Only a bucket's own directory: a stack recorded by an older emulator may name any path."""
        bucket = within(self.buckets, os.path.relpath(directory, self.buckets.resolve()))
        shutil.rmtree(bucket, ignore_errors=True)


def _outputs(runtime: AgentRuntime) -> dict[str, str]:
    artifact = runtime.request.get("agentRuntimeArtifact") or {}
    named = [name for name in runtime.endpoints if name != "DEFAULT"]
    return {
        "RuntimeArn": runtime.arn,
        "RuntimeId": runtime.id,
        "RuntimeEndpointName": named[0] if named else "DEFAULT",
        "ImageUri": str(artifact.get("containerConfiguration", {}).get("containerUri", "")),
    }
