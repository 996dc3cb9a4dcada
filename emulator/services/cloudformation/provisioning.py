"""A stack applied in the background (CloudFormation's control plane answers at once): its image assets
built, its resources made in dependency order (template.py) through the resource-type table
(resources.py), each step a stack event; on a failure what was made deleted again, newest first
(`ROLLBACK_COMPLETE`), unless the stack disabled rollback; and on DeleteStack everything it made deleted
newest first, waiting until an endpoint's or a runtime's containers are gone, except what says
`DeletionPolicy: Retain` (`DELETE_SKIPPED`), with the image tags it built.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from emulator.config import EmulatorConfig
from emulator.controller.paths import within
from emulator.controller.store import Stack, StackEvent, StackResource, Store
from emulator.services.cloudformation.resources import RESOURCE_TYPES, Context, ResourceType
from emulator.services.cloudformation.shapes import (
    BUILD_PLATFORM_TAG,
    ENGINE_PLATFORM,
    ImageAsset,
    Undo,
)
from emulator.services.cloudformation.template import Scope, TemplateError, condition, creation_order, resolve
from emulator.wire.awserrors import AwsError

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


class ImageAssets(Protocol):
    """Builds a stack's image assets as local tags, and removes them with the stack (a thread runs it)."""

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> tuple[str, str | None]:
        """The asset's tag; and the sentence for the stack's events that says what platform it was built
        for, when the asset names one."""

    def remove(self, tag: str) -> bool: ...


def _reason(exc: BaseException) -> str:
    if isinstance(exc, AwsError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, KeyError):
        return f"Properties validation failed: required property {exc.args[0]} is missing"
    return str(exc) or repr(exc)


class Provisioning:
    """The work behind CreateStack and DeleteStack, over the store's stacks."""

    def __init__(self, config: EmulatorConfig, store: Store, peers: Peers, images: ImageAssets) -> None:
        self.config = config
        self.store = store
        self.peers = peers
        self.images = images
        self.buckets = config.home_dir / "buckets"

    def exports(self) -> dict[str, str]:
        return {
            export: value
            for stack in self.store.stacks.values()
            if stack.status not in ENDED
            for value, export in stack.outputs.values()
            if export
        }

    def event(self, stack: Stack, resource: StackResource | None, status: str, reason: str | None) -> None:
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

    # -- creating

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

            def progress(line: str) -> None:
                logger.info("%s: %s", stack.name, line)

            on_engine = stack.tags.get(BUILD_PLATFORM_TAG) == ENGINE_PLATFORM
            asset = ImageAsset(dockerfile, asset_hash, build_args, source.get("platform"), on_engine)
            tags[asset_hash], platform = await asyncio.to_thread(self.images.build, asset, progress)
            if platform:
                self.event(stack, None, "CREATE_IN_PROGRESS", platform)
            stack.images.append(tags[asset_hash])
            self.event(
                stack, None, "CREATE_IN_PROGRESS", f"image asset {asset_hash[:12]} is {tags[asset_hash]}"
            )
        return tags

    async def create(self, stack: Stack, template_path: Path | None) -> None:
        """Make the stack's resources; on a failure, roll back what was made (unless disabled)."""
        template = stack.template
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
            self.event(stack, None, "CREATE_IN_PROGRESS", f"Rules not evaluated by the emulator: {rules}")
        failed: StackResource | None = None
        try:
            images = await self._publish(stack, template_path)
            assembly = template_path.parent if template_path else None
            context = Context(scope, self.peers.call, self.peers.offers, images, assembly, self.buckets)
            failed = await self._make_all(stack, context)
            if failed is None:
                self._outputs(stack, scope)
        except TemplateError as exc:
            self.event(stack, None, "CREATE_FAILED", str(exc))
            failed = StackResource(stack.name, "AWS::CloudFormation::Stack")
        except Exception as exc:
            logger.exception("stack %s failed", stack.name)
            self.event(stack, None, "CREATE_FAILED", _reason(exc))
            failed = StackResource(stack.name, "AWS::CloudFormation::Stack")
        if failed is None:
            self.event(stack, None, "CREATE_COMPLETE", None)
        elif stack.disable_rollback:
            self.event(stack, None, "CREATE_FAILED", CREATE_FAILURE.format(failed.logical_id))
        else:
            self.event(
                stack, None, "ROLLBACK_IN_PROGRESS", CREATE_FAILURE.format(failed.logical_id) + ROLLBACK
            )
            left = await self._delete_resources(stack)
            self.event(stack, None, "ROLLBACK_COMPLETE" if left is None else "ROLLBACK_FAILED", left)

    async def _make_all(self, stack: Stack, context: Context) -> StackResource | None:
        """Each resource in creation order, its condition permitting; the first that fails, or None."""
        resources: dict[str, Any] = stack.template["Resources"]
        for logical in creation_order(resources):
            raw = resources[logical]
            if raw.get("Condition") and not condition(raw["Condition"], context.scope):
                continue
            resource = stack.resources[logical] = StackResource(logical, raw["Type"])
            resource.retain = raw.get("DeletionPolicy") == "Retain"
            self.event(stack, resource, "CREATE_IN_PROGRESS", None)
            try:
                await self._make(stack, context, resource, raw)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a resource's failure is its event, never the emulator's
                if not isinstance(exc, AwsError | TemplateError | KeyError | OSError):
                    logger.exception("stack %s: creating %s failed", stack.name, logical)
                self.event(stack, resource, "CREATE_FAILED", _reason(exc))
                return resource
        return None

    def _outputs(self, stack: Stack, scope: Scope) -> None:
        for key, output in (stack.template.get("Outputs") or {}).items():
            if output.get("Condition") and not condition(output["Condition"], scope):
                continue
            export = output.get("Export", {}).get("Name")
            stack.outputs[key] = (
                str(resolve(output["Value"], scope)),
                resolve(export, scope) if export else None,
            )

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
        self.event(stack, resource, "CREATE_COMPLETE", made.note)

    # -- deleting

    async def delete(self, stack: Stack, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await previous
            stack.status = "DELETE_IN_PROGRESS"
        left = await self._delete_resources(stack)
        for tag in stack.images:
            if not await asyncio.to_thread(self.images.remove, tag):
                left = left or f"the image {tag} could not be removed (a container still uses it?)"
        if left is not None:
            self.event(stack, None, "DELETE_FAILED", left)
            return
        stack.deleted = time.time()
        self.event(stack, None, "DELETE_COMPLETE", None)

    async def _delete_resources(self, stack: Stack) -> str | None:
        """Delete the stack's resources newest first; None, or why one could not be deleted."""
        for resource in reversed(stack.resources.values()):
            if resource.status in {"DELETE_COMPLETE", "DELETE_SKIPPED"}:
                continue
            if resource.retain and resource.status == "CREATE_COMPLETE":
                self.event(stack, resource, "DELETE_SKIPPED", "DeletionPolicy Retain: left in place")
                continue
            self.event(stack, resource, "DELETE_IN_PROGRESS", None)
            try:
                for step in resource.undo:
                    await self._undo(step)
            except (AwsError, TimeoutError, OSError) as exc:
                reason = _reason(exc)
                self.event(stack, resource, "DELETE_FAILED", reason)
                return f"The following resource(s) failed to delete: [{resource.logical_id}]: {reason}"
            self.event(stack, resource, "DELETE_COMPLETE", None)
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
