"""The emulated AgentCore's CPU architecture, as AWS's: a runtime is ARM64 unless its one
`cpuConfigurations` entry says X86_64, and an image built for another CPU is refused at create and update
with AgentCore's ValidationException; an image the emulator built for its engine in place of an arm64
one (labelled `STAND_IN_LABEL`) is accepted and said so; under local commands nothing can be told.
No engine: the runtime's answer about each image is given here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emulator.controller.runtimes import ImagePlatform
from emulator.controller.store import Store
from emulator.services.agentcore.control import AgentCoreControl
from emulator.wire.awserrors import AwsError

ROLE = "arn:aws:iam::123456789012:role/agent"
IMAGES = {
    "arm:1": ImagePlatform("linux/arm64"),
    "amd:1": ImagePlatform("linux/amd64"),
    "standin:1": ImagePlatform("linux/amd64", stands_in_for="linux/arm64"),
}


class Runtime:
    """The engine's answer about each image (None: an image it does not have, or local commands)."""

    def image_platform(self, image: str) -> ImagePlatform | None:
        return IMAGES.get(image)


class Controller:
    runtime = Runtime()

    def wake(self) -> None:
        return None

    def retire(self, replica: object) -> None:
        return None


@pytest.fixture
def control(tmp_path: Path) -> AgentCoreControl:
    return AgentCoreControl(
        Store(),
        Controller(),  # type: ignore[arg-type]  # what the control plane uses of it
        region="us-east-1",
        account_id="123456789012",
        logs=tmp_path,
        platform_env={},
    )


def request(name: str, image: str, **extra: Any) -> dict[str, Any]:
    return {
        "agentRuntimeName": name,
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": image}},
        "roleArn": ROLE,
        **extra,
    }


def refused(call: Any, *args: Any) -> AwsError:
    with pytest.raises(AwsError) as caught:
        call(*args)
    assert caught.value.code == "ValidationException"
    return caught.value


def test_an_amd64_image_is_refused_with_agentcores_error(control: AgentCoreControl):
    error = refused(control.CreateAgentRuntime, request("agent", "amd:1"))
    assert error.message == "Architecture incompatible for uri 'amd:1'. Supported architectures: [arm64]"
    assert error.status == 400
    assert control.store.agent_runtimes == {}


def test_an_arm64_image_makes_an_arm64_runtime_and_the_platform_is_recorded(control: AgentCoreControl):
    created = control.CreateAgentRuntime(request("agent", "arm:1"))
    runtime = control.store.agent_runtimes[created["agentRuntimeId"]]
    assert runtime.platform == "linux/arm64"
    described = control.GetAgentRuntime({"agentRuntimeId": runtime.id})
    assert described["cpuConfigurations"] == [{"architecture": "ARM64"}]


def test_a_stand_in_is_accepted_and_said_to_be_one(control: AgentCoreControl):
    created = control.CreateAgentRuntime(request("agent", "standin:1"))
    assert control.store.agent_runtimes[created["agentRuntimeId"]].platform == "linux/amd64 for linux/arm64"
    (event,) = [e for e in control.store.events.recent() if e.reason == "PlatformStandIn"]
    assert event.type == "Warning" and "in place of linux/arm64" in event.message


def test_local_commands_cannot_be_told_and_are_not_refused(control: AgentCoreControl):
    created = control.CreateAgentRuntime(request("agent", "toy-agent:1"))
    assert control.store.agent_runtimes[created["agentRuntimeId"]].platform is None


def test_an_x86_64_runtime_takes_amd64_and_refuses_arm64(control: AgentCoreControl):
    x86 = {"cpuConfigurations": [{"architecture": "X86_64"}]}
    created = control.CreateAgentRuntime(request("x86", "amd:1", **x86))
    assert control.store.agent_runtimes[created["agentRuntimeId"]].platform == "linux/amd64"
    error = refused(control.CreateAgentRuntime, request("other", "arm:1", **x86))
    assert error.message.endswith("Supported architectures: [x86_64]")


def test_cpu_configurations_are_checked(control: AgentCoreControl):
    two = [{"architecture": "ARM64"}, {"architecture": "X86_64"}]
    assert (
        "At most one entry"
        in refused(control.CreateAgentRuntime, request("a", "arm:1", cpuConfigurations=two)).message
    )
    assert (
        "enum value set: [ARM64, X86_64]"
        in refused(
            control.CreateAgentRuntime, request("a", "arm:1", cpuConfigurations=[{"architecture": "RISCV"}])
        ).message
    )


def test_an_update_to_an_amd64_image_or_another_cpu_is_refused(control: AgentCoreControl):
    runtime_id = control.CreateAgentRuntime(request("agent", "arm:1"))["agentRuntimeId"]
    runtime = control.store.agent_runtimes[runtime_id]
    runtime.status = "READY"
    update = {k: v for k, v in request("agent", "amd:1").items() if k != "agentRuntimeName"}
    error = refused(control.UpdateAgentRuntime, {**update, "agentRuntimeId": runtime_id})
    assert error.message.startswith("Architecture incompatible for uri 'amd:1'")
    other_cpu = {**update, "agentRuntimeId": runtime_id, "cpuConfigurations": [{"architecture": "X86_64"}]}
    assert "Immutable after creation" in refused(control.UpdateAgentRuntime, other_cpu).message
    assert runtime.version == 1
    good = {**update, "agentRuntimeId": runtime_id}
    good["agentRuntimeArtifact"] = {"containerConfiguration": {"containerUri": "arm:1"}}
    assert control.UpdateAgentRuntime(good)["agentRuntimeVersion"] == "2"
    assert control.GetAgentRuntime({"agentRuntimeId": runtime_id})["cpuConfigurations"] == [
        {"architecture": "ARM64"}
    ]
