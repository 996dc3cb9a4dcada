"""What the SageMaker endpoint and the AgentCore runtime are doing, in one line each: ready, or why not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

NOT_DEPLOYED = "not deployed"
RUNTIME_FAILED = frozenset({"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})


@dataclass(frozen=True)
class Status:
    resource: str
    state: str
    ready: bool
    detail: str = ""

    def __str__(self) -> str:
        mark = "ok " if self.ready else "-- "
        return f"{mark}{self.resource}: {self.state}" + (f" ({self.detail})" if self.detail else "")


def _describe_endpoint(sagemaker: Any, name: str) -> dict[str, Any] | None:
    try:
        return sagemaker.describe_endpoint(EndpointName=name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in {"ValidationException", "ValidationError"}:
            return None
        raise


def _instances(sagemaker: Any, endpoint: dict[str, Any]) -> str:
    """`ml.g5.xlarge x1` from the endpoint config and the variants' current instance counts."""
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    types = {
        variant["VariantName"]: variant.get("InstanceType", "?") for variant in config["ProductionVariants"]
    }
    parts = []
    for variant in endpoint.get("ProductionVariants", []):
        count = variant.get("CurrentInstanceCount", variant.get("DesiredInstanceCount", "?"))
        parts.append(f"{types.get(variant['VariantName'], '?')} x{count}")
    return ", ".join(parts) or ", ".join(types.values())


def endpoint_status(sagemaker: Any, name: str) -> Status:
    resource = f"endpoint {name}"
    endpoint = _describe_endpoint(sagemaker, name)
    if endpoint is None:
        region = sagemaker.meta.region_name
        return Status(resource, NOT_DEPLOYED, False, f"no endpoint named {name} in {region}")
    state = endpoint["EndpointStatus"]
    if state == "InService":
        return Status(resource, state, True, _instances(sagemaker, endpoint))
    reason = endpoint.get("FailureReason")
    if reason:
        return Status(resource, state, False, reason)
    if state in {"Creating", "Updating", "SystemUpdating", "RollingBack"}:
        return Status(resource, state, False, "not in service yet; instances are starting or changing")
    return Status(resource, state, False, "not in service")


def find_runtime(agentcore: Any, name: str) -> dict[str, Any] | None:
    """The runtime summary with this name (names are unique per account and region), else None."""
    request: dict[str, Any] = {}
    while True:
        page = agentcore.list_agent_runtimes(**request)
        for runtime in page.get("agentRuntimes", []):
            if runtime["agentRuntimeName"] == name:
                return runtime
        if not page.get("nextToken"):
            return None
        request = {"nextToken": page["nextToken"]}


def runtime_status(agentcore: Any, name: str) -> Status:
    resource = f"agent runtime {name}"
    summary = find_runtime(agentcore, name)
    if summary is None:
        region = agentcore.meta.region_name
        return Status(resource, NOT_DEPLOYED, False, f"no AgentCore runtime named {name} in {region}")
    runtime = agentcore.get_agent_runtime(agentRuntimeId=summary["agentRuntimeId"])
    state = runtime["status"]
    if state == "READY":
        env = runtime.get("environmentVariables") or {}
        detail = f"version {runtime.get('agentRuntimeVersion', '?')}"
        if env.get("AGENT_TTS_ENDPOINT"):
            detail += f", speaks through {env['AGENT_TTS_ENDPOINT']}"
        if env.get("AGENT_STT_ENDPOINT"):
            detail += f", listens through {env['AGENT_STT_ENDPOINT']}"
        if env.get("AGENT_BEDROCK_MODEL_ID"):
            detail += f", thinks with {env['AGENT_BEDROCK_MODEL_ID']}"
        return Status(resource, state, True, detail)
    if state in RUNTIME_FAILED:
        return Status(resource, state, False, runtime.get("failureReason") or "no reason given")
    return Status(resource, state, False, "not ready yet")
