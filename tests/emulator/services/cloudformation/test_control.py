"""CloudFormation's stacks of a manifest's runtimes: a stack is the agent runtimes tagged with its name; its
outputs are the runtime stack's; deleting it deletes them through AgentCore's own operation (the caller
the app wires in), and a stack that does not exist is CloudFormation's ValidationError. A stack's image
assets reach the image builder with their build arguments (CDK's `dockerBuildArgs`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from emulator.config import EmulatorConfig
from emulator.controller.store import AgentRuntime, Store
from emulator.services.cloudformation.control import CloudFormationControl
from emulator.services.cloudformation.resources import STACK_TAG
from emulator.services.cloudformation.shapes import BUILD_PLATFORM_TAG, ENGINE_PLATFORM, ImageAsset
from emulator.wire.awserrors import AwsError

ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/voice_agent-abcdefghij"


def stacks(*tagged: str) -> tuple[CloudFormationControl, list[tuple[str, str, dict[str, Any]]]]:
    store, calls = Store(), []
    for n, stack in enumerate(tagged):
        artifact = {"containerConfiguration": {"containerUri": f"agent:{n}"}}
        request = {"tags": {STACK_TAG: stack}, "agentRuntimeArtifact": artifact}
        runtime_id = f"voice_agent-{n:010d}"
        store.agent_runtimes[runtime_id] = AgentRuntime(runtime_id, "voice_agent", ARN, request)

    class Peers:
        def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
            calls.append((service, operation, body))
            return {}

        def offers(self, service: str) -> bool:
            return False

    return CloudFormationControl(EmulatorConfig(), store, Peers(), images=None), calls  # type: ignore[arg-type]


def test_a_stack_is_its_tagged_runtimes_with_the_runtime_stacks_outputs():
    cloudformation, _ = stacks("VoiceAgent-Runtime")
    (stack,) = cloudformation.DescribeStacks({"StackName": "VoiceAgent-Runtime"})["Stacks"]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert outputs == {
        "RuntimeArn": ARN,
        "RuntimeId": "voice_agent-0000000000",
        "RuntimeEndpointName": "DEFAULT",
        "ImageUri": "agent:0",
    }


def test_deleting_a_stack_deletes_its_runtimes_through_agentcore():
    cloudformation, calls = stacks("VoiceAgent-Runtime", "Other")
    assert cloudformation.DeleteStack({"StackName": "VoiceAgent-Runtime"}) == {}
    assert calls == [
        ("bedrock-agentcore-control", "DeleteAgentRuntime", {"agentRuntimeId": "voice_agent-0000000000"})
    ]


@pytest.mark.parametrize(("body", "message"), [({"StackName": "Nope"}, "does not exist"), ({}, "required")])
def test_a_stack_that_does_not_exist_is_a_validation_error(body: dict[str, Any], message: str):
    cloudformation, calls = stacks()
    with pytest.raises(AwsError, match=message) as raised:
        cloudformation.DescribeStackEvents(body)
    assert raised.value.code == "ValidationError"
    assert cloudformation.DeleteStack({"StackName": "Nope"}) == {} and calls == []  # as on AWS
    assert cloudformation.DescribeStacks({}) == {"Stacks": []}  # no name: every live stack


class NoPeers:
    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        return {}

    def offers(self, service: str) -> bool:
        return False


class Recorder:
    """Tags each image asset without building it, recording what it was asked to build."""

    def __init__(self) -> None:
        self.built: list[tuple[str, dict[str, str]]] = []

    def build(self, asset: ImageAsset, progress: Callable[[str], None]) -> tuple[str, str | None]:
        self.built.append((asset.dockerfile, dict(asset.build_args)))
        return f"local/asset:{asset.asset_hash[:8]}", None


class Assets:
    """What the stack asked the image builder for: each asset's platform and whether the host's instead."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None, bool]] = []

    def build(self, asset: ImageAsset, progress: Any) -> tuple[str, str | None]:
        self.asked.append((asset.dockerfile, asset.platform, asset.host_platform))
        return (
            f"rehearsal/agent:{asset.asset_hash}",
            f"built {asset.dockerfile} (host: {asset.host_platform})",
        )

    def remove(self, tag: str) -> bool:
        return True


def create_from_assembly(tmp_path: Path, source: dict[str, Any]) -> tuple[Recorder, list[str]]:
    """A one-resource stack whose assets.json names one image asset with `source`: the builder's record
    and the stack's status reasons."""
    template = tmp_path / "Kit.template.json"
    template.write_text(json.dumps({"Resources": {"Meta": {"Type": "AWS::CDK::Metadata"}}}))
    assets = {"dockerImages": {"a" * 64: {"source": source, "destinations": {}}}}
    (tmp_path / "Kit.assets.json").write_text(json.dumps(assets))
    store, images = Store(), Recorder()
    cloudformation = CloudFormationControl(EmulatorConfig(home=tmp_path), store, NoPeers(), images)

    async def create() -> list[str]:
        stack_id = cloudformation.CreateStack({"StackName": "Kit", "TemplateURL": template.as_uri()})[
            "StackId"
        ]
        stack = store.stacks[stack_id]
        await stack.task
        return [f"{e.status}: {e.reason}" for e in stack.events if e.logical_id == "Kit"]

    return images, asyncio.run(create())


def test_an_image_assets_build_arguments_reach_the_builder(tmp_path: Path):
    arguments = {"PACKAGE": "tts", "ENV_PREFIX": "TTS", "WEIGHTS_DIR": "/opt/kokoro"}
    images, events = create_from_assembly(
        tmp_path, {"directory": ".", "dockerFile": "container_kit/Dockerfile", "dockerBuildArgs": arguments}
    )
    assert images.built == [("container_kit/Dockerfile", arguments)]
    assert events[-1] == "CREATE_COMPLETE: None"


def test_build_arguments_that_are_not_strings_fail_the_stack(tmp_path: Path):
    images, events = create_from_assembly(
        tmp_path, {"directory": ".", "dockerFile": "container_kit/Dockerfile", "dockerBuildArgs": {"N": 1}}
    )
    assert images.built == []
    assert "CREATE_FAILED: container_kit/Dockerfile: dockerBuildArgs must map names to strings" in events


@pytest.mark.parametrize("tags", [[], [{"Key": BUILD_PLATFORM_TAG, "Value": ENGINE_PLATFORM}]])
async def test_an_assets_platform_reaches_the_builder_and_the_stacks_tag_can_ask_for_the_hosts(
    tmp_path: Path, tags: list[dict[str, str]]
):
    """`deploy aws --target local --host-platform` tags its stacks; without the tag the agent's asset is
    built for the linux/arm64 its manifest names (where the engine runs it: emulator/images/assets.py)."""
    (tmp_path / "Agent.template.json").write_text(
        json.dumps({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}})
    )
    source = {"directory": ".", "dockerFile": "agent/Dockerfile", "platform": "linux/arm64"}
    (tmp_path / "Agent.assets.json").write_text(json.dumps({"dockerImages": {"abc123": {"source": source}}}))
    assets = Assets()
    peers = stacks()[0].peers  # answers every call with nothing
    cloudformation = CloudFormationControl(EmulatorConfig(home=tmp_path / "home"), Store(), peers, assets)  # type: ignore[arg-type]
    url = (tmp_path / "Agent.template.json").as_uri()
    stack_id = cloudformation.CreateStack({"StackName": "Agent", "TemplateURL": url, "Tags": tags})["StackId"]
    await cloudformation.store.stacks[stack_id].task
    host = bool(tags)
    assert assets.asked == [("agent/Dockerfile", "linux/arm64", host)]
    reasons = [
        e["ResourceStatusReason"]
        for e in cloudformation.DescribeStackEvents({"StackName": "Agent"})["StackEvents"]
        if e.get("ResourceStatusReason")
    ]
    assert f"built agent/Dockerfile (host: {host})" in reasons
