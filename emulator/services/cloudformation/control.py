"""CloudFormation's operations: stacks made from a template by the other services, with their events.

- `CreateStack` takes the template as `TemplateBody` (JSON) or as `TemplateURL=file://<assembly>/
  <stack>.template.json`, the CDK's cloud assembly on this machine standing for what the CDK toolkit
  uploads to S3 and ECR: beside the template, `<stack>.assets.json` names the image assets (each built
  from its Dockerfile and build arguments by the emulator's image builder, `ImageAssets`, as the local
  tag that stands for its ECR URI) and the staged file assets (`asset.<hash>` directories, which a
  BucketDeployment copies).
  It answers at once (`CREATE_IN_PROGRESS`); the stack is made in the background (provisioning.py),
  resource by resource in dependency order (template.py), each through the resource-type table
  (resources.py), each step a stack event. A resource that fails is `CREATE_FAILED` with the reason;
  what was made is deleted again, newest first (`ROLLBACK_COMPLETE`), unless `DisableRollback` /
  `OnFailure=DO_NOTHING`.
- `DeleteStack` deletes what the stack made, newest first (waiting until an endpoint's or a runtime's
  containers are gone), keeps what says `DeletionPolicy: Retain` (`DELETE_SKIPPED`), removes the image
  tags it built (provisioning.py), and leaves the stack listed as `DELETE_COMPLETE` (described by its
  StackId, as on AWS).
- `DescribeStacks`, `DescribeStackEvents` (newest first), `DescribeStackResources`,
  `ListStackResources`, `ListStacks`, `GetTemplate` read the store. UpdateStack is not emulated.
- The agent runtimes a manifest tags `aws:cloudformation:stack-name: <stack>` (the default manifest's
  `voice_agent` is the deploy's `VoiceAgent-Runtime`) form a stack too, with the runtime stack's
  outputs; deleting it deletes them through AgentCore.

The state lives in the store (`Store.stacks`), so `emulator status` shows the stacks.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid
from typing import Any

from emulator.config import EmulatorConfig
from emulator.controller.store import AgentRuntime, Stack, StackResource, Store
from emulator.services.cloudformation.errors import already_exists, no_such_stack
from emulator.services.cloudformation.provisioning import ENDED, ImageAssets, Peers, Provisioning
from emulator.services.cloudformation.resources import STACK_TAG
from emulator.services.cloudformation.shapes import parameters, stack_name, template_of
from emulator.wire.awsjson import Operation


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat(timespec="milliseconds")


class CloudFormationControl:
    def __init__(self, config: EmulatorConfig, store: Store, peers: Peers, images: ImageAssets) -> None:
        self.config = config
        self.store = store
        self.peers = peers
        self.provisioning = Provisioning(config, store, peers, images)

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

    def find(self, name: str) -> Stack | None:
        """The live stack of that name, or the stack (deleted ones too) of that StackId."""
        if name in self.store.stacks:
            return self.store.stacks[name]
        live = [s for s in self.store.stacks.values() if s.name == name and s.status not in ENDED]
        return live[0] if live else None

    def _stack(self, body: dict[str, Any]) -> Stack:
        name = stack_name(body)
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
        name = stack_name(body)
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

    # -- creating and deleting: the work is provisioning.py's, in the background

    def CreateStack(self, body: dict[str, Any]) -> dict[str, Any]:
        name = stack_name(body)
        if self.find(name) is not None or self.stack_runtimes(name):
            raise already_exists(name)
        template, template_path = template_of(body)
        region, account = self.config.region, self.config.account_id
        stack = Stack(
            name=name,
            id=f"arn:aws:cloudformation:{region}:{account}:stack/{name}/{uuid.uuid4()}",
            template=template,
            parameters=parameters(template, body),
            disable_rollback=str(body.get("DisableRollback", "")).lower() == "true"
            or body.get("OnFailure") == "DO_NOTHING",
            tags={str(t.get("Key")): str(t.get("Value", "")) for t in body.get("Tags") or []},
        )
        self.store.stacks[stack.id] = stack
        self.provisioning.event(stack, None, "CREATE_IN_PROGRESS", "User Initiated")
        stack.task = asyncio.get_running_loop().create_task(self.provisioning.create(stack, template_path))
        return {"StackId": stack.id}

    def DeleteStack(self, body: dict[str, Any]) -> dict[str, Any]:
        """Deleting a stack that does not exist succeeds, as on AWS."""
        name = stack_name(body)
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
        self.provisioning.event(stack, None, "DELETE_IN_PROGRESS", "User Initiated")
        stack.task = asyncio.get_running_loop().create_task(self.provisioning.delete(stack, previous))
        return {}


def _outputs(runtime: AgentRuntime) -> dict[str, str]:
    artifact = runtime.request.get("agentRuntimeArtifact") or {}
    named = [name for name in runtime.endpoints if name != "DEFAULT"]
    return {
        "RuntimeArn": runtime.arn,
        "RuntimeId": runtime.id,
        "RuntimeEndpointName": named[0] if named else "DEFAULT",
        "ImageUri": str(artifact.get("containerConfiguration", {}).get("containerUri", "")),
    }
