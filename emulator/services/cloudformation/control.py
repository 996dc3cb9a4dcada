"""CloudFormation DescribeStacks and DeleteStack, for the stacks the emulator holds.

`agent-infra destroy` deletes the deploy's stacks by name and waits with boto3's
`stack_delete_complete`; with these operations it runs unchanged against the emulator. A stack here is
the set of agent runtimes tagged `aws:cloudformation:stack-name: <stack>` (the tag CloudFormation puts
on what it creates; the default manifest gives `voice_agent` the deploy's `VoiceAgent-Runtime`). A
stack has the outputs the deploy's runtime stack declares (RuntimeArn, RuntimeId,
RuntimeEndpointName, ImageUri); deleting it deletes its runtimes through AgentCore's own operation
(`DELETE_IN_PROGRESS` until they are gone, then "does not exist", as for a deleted stack). Templates,
create and update are not emulated.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from emulator.config import EmulatorConfig
from emulator.controller.store import AgentRuntime, Store
from emulator.services.cloudformation.errors import no_such_stack, validation
from emulator.wire.awsjson import Operation

STACK_TAG = "aws:cloudformation:stack-name"
"""The tag CloudFormation puts on what it creates."""

Caller = Callable[[str, str, dict[str, Any]], dict[str, Any]]
"""Another service's control operation: (service, operation, request) -> response; wired by
emulator/app.py from the services' operation tables, so that CloudFormation imports no service."""


def _iso(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat(timespec="milliseconds")


class CloudFormation:
    def __init__(self, config: EmulatorConfig, store: Store, call: Caller) -> None:
        self.config = config
        self.store = store
        self.call = call

    def operations(self) -> dict[str, Operation]:
        return {"DescribeStacks": self.DescribeStacks, "DeleteStack": self.DeleteStack}

    def stack_runtimes(self, stack: str) -> list[AgentRuntime]:
        return [
            rt
            for rt in self.store.agent_runtimes.values()
            if (rt.request.get("tags") or {}).get(STACK_TAG) == stack
        ]

    def _name(self, body: dict[str, Any]) -> str:
        name = body.get("StackName")
        if not isinstance(name, str) or not name:
            raise validation("StackName is required (listing stacks is not emulated)")
        return name

    def DescribeStacks(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name(body)
        runtimes = self.stack_runtimes(name)
        if not runtimes:
            raise no_such_stack(name)
        deleting = any(rt.status == "DELETING" for rt in runtimes)
        region, account = self.config.region, self.config.account_id
        stack_id = f"arn:aws:cloudformation:{region}:{account}:stack/{name}/{runtimes[0].id}"
        outputs = [{"OutputKey": key, "OutputValue": value} for key, value in _outputs(runtimes[0]).items()]
        stack = {
            "StackName": name,
            "StackId": stack_id,
            "CreationTime": _iso(min(rt.created for rt in runtimes)),
            "StackStatus": "DELETE_IN_PROGRESS" if deleting else "CREATE_COMPLETE",
            "Outputs": outputs,
        }
        return {"Stacks": [stack]}

    def DeleteStack(self, body: dict[str, Any]) -> dict[str, Any]:
        """Deleting a stack that does not exist succeeds, as on AWS."""
        for runtime in self.stack_runtimes(self._name(body)):
            self.call("bedrock-agentcore-control", "DeleteAgentRuntime", {"agentRuntimeId": runtime.id})
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
