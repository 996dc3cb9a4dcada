"""Bedrock AgentCore Runtime control plane: agent runtimes and their endpoints, as operations.

`AgentCoreControl` holds the operations as plain methods taking the boto3 request (path and
query members included, as `bedrock-agentcore-control` names them) and returning the response
members, so the YAML manifests (`kind: AgentRuntime`, spec = the `create_agent_runtime` request) go
through exactly the code boto3 reaches. `emulator/services/agentcore/routes.py` binds them to restJson1.

As in AgentCore: CreateAgentRuntime returns at once with the runtime `CREATING` and version 1; the
controller runs the image as a replica and the runtime becomes `READY` once the replica answers
`GET /ping` (or `CREATE_FAILED` with a reason). UpdateAgentRuntime makes version N+1 (`UPDATING`,
the old version serving until the new replica is ready). The `DEFAULT` endpoint always follows the
latest version. Not emulated: several versions serving at once (every named endpoint reaches the
replica of the latest version), code (S3) artifacts, VPC networking, authorizers, per-session
microVMs (one replica serves every session).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from emulator.controller.reconcile import Controller
from emulator.controller.store import AgentRuntime, Model, Replica, RuntimeEndpoint, Store
from emulator.services.agentcore.errors import architecture_incompatible, conflict, field_error, not_found
from emulator.services.agentcore.shapes import (
    ARCHITECTURES,
    DEFAULT_ENDPOINT,
    ENDPOINT_NAME_RE,
    ID_ALPHABET,
    RUNTIME_ID_RE,
    RUNTIME_NAME_RE,
    architecture,
    check_request,
    container_uri,
    environment,
    iso,
    required_string,
    string_map,
)
from emulator.wire.awsjson import Operation


class AgentCoreControl:
    def __init__(
        self,
        store: Store,
        controller: Controller,
        *,
        region: str,
        account_id: str,
        logs: Path,
        platform_env: Mapping[str, str],
        on_create: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.on_create = on_create
        """Called for each runtime created: the app starts loading the model an agent will ask."""
        self.controller = controller
        self.region = region
        self.account_id = account_id
        self.logs = logs
        self.platform_env = dict(platform_env)
        """What AgentCore gives every runtime (region, credentials) plus the emulator's endpoints."""

    def operations(self) -> dict[str, Operation]:
        return {
            name: getattr(self, name)
            for name in (
                "CreateAgentRuntime",
                "GetAgentRuntime",
                "ListAgentRuntimes",
                "UpdateAgentRuntime",
                "DeleteAgentRuntime",
                "CreateAgentRuntimeEndpoint",
                "GetAgentRuntimeEndpoint",
                "ListAgentRuntimeEndpoints",
                "DeleteAgentRuntimeEndpoint",
            )
        }

    def runtime_arn(self, runtime_id: str) -> str:
        return f"arn:aws:bedrock-agentcore:{self.region}:{self.account_id}:runtime/{runtime_id}"

    def _replica(self, runtime: AgentRuntime, body: Mapping[str, Any]) -> Replica:
        """The replica of the runtime's current version (not yet started)."""
        image = container_uri(body)
        model = Model(
            name=runtime.name,
            arn=runtime.arn,
            image=image,
            environment={**self.platform_env, **environment(body)},
            model_data=None,
            created=time.time(),
            request=dict(body),
        )
        replica_id = f"{runtime.id}-v{runtime.version}".lower()
        return Replica(
            id=replica_id,
            endpoint=runtime.name,
            variant=f"version {runtime.version}",
            model=model,
            log_path=self.logs / runtime.name / f"{replica_id}.log",
            container_args=(),
        )

    def image_platform(self, body: Mapping[str, Any], cpu: str) -> str | None:
        """What the request's image is built for, refused as AgentCore refuses it when that is not the
        runtime's architecture (`cpu`, ARM64 by default); an image the emulator built for its engine in
        place of an arm64 one (`STAND_IN_LABEL`) is accepted, and said so. None where the runtime cannot
        tell (local commands; an image the engine lacks fails when its replica starts)."""
        uri = container_uri(body)
        found = self.controller.runtime.image_platform(uri)
        if found is None:
            return None
        wanted = ARCHITECTURES[cpu]
        if found.platform == wanted:
            return wanted
        if found.stands_in_for != wanted:
            raise architecture_incompatible(uri, cpu)
        self.store.events.add(
            "Warning",
            "PlatformStandIn",
            str(body.get("agentRuntimeName") or body.get("agentRuntimeId")),
            f"image {uri} is {found.platform}, built by the emulator in place of {wanted} (AgentCore runs "
            f"only {wanted} there): this run does not show how it runs as {wanted}",
        )
        return f"{found.platform} for {wanted}"

    # runtimes -------------------------------------------------------------------------------------

    def CreateAgentRuntime(self, body: dict[str, Any]) -> dict[str, Any]:
        name = required_string(body, "agentRuntimeName", RUNTIME_NAME_RE)
        check_request(body)
        string_map(body, "tags")
        if any(rt.name == name for rt in self.store.agent_runtimes.values()):
            raise conflict(f"An agent runtime with the name {name} already exists")
        platform = self.image_platform(body, architecture(body))
        runtime_id = f"{name}-{''.join(secrets.choice(ID_ALPHABET) for _ in range(10))}"
        arn = self.runtime_arn(runtime_id)
        request = {k: v for k, v in body.items() if k != "clientToken"}
        runtime = AgentRuntime(id=runtime_id, name=name, arn=arn, request=request, platform=platform)
        runtime.pending = self._replica(runtime, body)
        runtime.endpoints[DEFAULT_ENDPOINT] = self._endpoint(runtime, DEFAULT_ENDPOINT, "1")
        self.store.agent_runtimes[runtime_id] = runtime
        self.store.events.add("Normal", "Creating", name, f"agent runtime {runtime_id} version 1")
        self.controller.wake()
        self.on_create()
        return {
            "agentRuntimeArn": arn,
            "agentRuntimeId": runtime_id,
            "agentRuntimeVersion": "1",
            "createdAt": iso(runtime.created),
            "status": runtime.status,
        }

    def _runtime(self, body: Mapping[str, Any]) -> AgentRuntime:
        runtime_id = required_string(body, "agentRuntimeId", RUNTIME_ID_RE)
        runtime = self.store.agent_runtimes.get(runtime_id)
        if runtime is None:
            raise not_found(f"Agent runtime {runtime_id} not found")
        return runtime

    def GetAgentRuntime(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime = self._runtime(body)
        version = body.get("agentRuntimeVersion")
        if version is not None and str(version) != str(runtime.version):
            raise not_found(
                f"Version {version} of agent runtime {runtime.id} not found "
                f"(the emulator keeps only the latest, {runtime.version})"
            )
        request = runtime.request
        out: dict[str, Any] = {
            "agentRuntimeArn": runtime.arn,
            "agentRuntimeName": runtime.name,
            "agentRuntimeId": runtime.id,
            "agentRuntimeVersion": str(runtime.version),
            "createdAt": iso(runtime.created),
            "lastUpdatedAt": iso(runtime.modified),
            "roleArn": request["roleArn"],
            "networkConfiguration": request.get("networkConfiguration") or {"networkMode": "PUBLIC"},
            "status": runtime.status,
            "lifecycleConfiguration": request.get("lifecycleConfiguration")
            or {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
            "agentRuntimeArtifact": request["agentRuntimeArtifact"],
            "protocolConfiguration": request.get("protocolConfiguration") or {"serverProtocol": "HTTP"},
            "environmentVariables": environment(request),
            "cpuConfigurations": [{"architecture": architecture(request)}],
        }
        if runtime.failure_reason:
            out["failureReason"] = runtime.failure_reason
        if request.get("description"):
            out["description"] = request["description"]
        return out

    def ListAgentRuntimes(self, body: dict[str, Any]) -> dict[str, Any]:
        runtimes = sorted(self.store.agent_runtimes.values(), key=lambda rt: rt.created)
        summaries = [
            {
                "agentRuntimeArn": rt.arn,
                "agentRuntimeId": rt.id,
                "agentRuntimeVersion": str(rt.version),
                "agentRuntimeName": rt.name,
                "description": str(rt.request.get("description") or ""),
                "lastUpdatedAt": iso(rt.modified),
                "status": rt.status,
            }
            for rt in runtimes
        ]
        return _page(summaries, "agentRuntimes", body)

    def UpdateAgentRuntime(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime = self._runtime(body)
        check_request(body)
        if runtime.status not in {"READY", "CREATE_FAILED", "UPDATE_FAILED"}:
            raise conflict(f"Agent runtime {runtime.id} is {runtime.status}; wait until it is READY")
        cpu = architecture(runtime.request)
        if body.get("cpuConfigurations") and architecture(body) != cpu:
            raise field_error("cpuConfigurations", f"Immutable after creation: the runtime is {cpu}")
        runtime.platform = self.image_platform({**body, "agentRuntimeName": runtime.name}, cpu)
        runtime.version += 1
        runtime.request = {
            "agentRuntimeName": runtime.name,
            "cpuConfigurations": [{"architecture": cpu}],
            **{k: v for k, v in body.items() if k not in {"clientToken", "agentRuntimeId"}},
        }
        if runtime.pending is not None:  # a failed creation: nothing serves yet
            self.controller.retire(runtime.pending)
        runtime.pending = self._replica(runtime, body)
        runtime.started = time.monotonic()
        runtime.status = "UPDATING" if runtime.current is not None else "CREATING"
        runtime.failure_reason = None
        runtime.modified = time.time()
        runtime.endpoints[DEFAULT_ENDPOINT].target_version = str(runtime.version)
        self.store.events.add("Normal", "Updating", runtime.name, f"to version {runtime.version}")
        self.controller.wake()
        return {
            "agentRuntimeArn": runtime.arn,
            "agentRuntimeId": runtime.id,
            "agentRuntimeVersion": str(runtime.version),
            "createdAt": iso(runtime.created),
            "lastUpdatedAt": iso(runtime.modified),
            "status": runtime.status,
        }

    def DeleteAgentRuntime(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime = self._runtime(body)
        if runtime.status != "DELETING":
            runtime.status = "DELETING"
            runtime.modified = time.time()
            self.store.events.add("Normal", "Deleting", runtime.name, "stopping its replica")
            self.controller.wake()
        return {
            "status": runtime.status,
            "agentRuntimeId": runtime.id,
            "agentRuntimeVersion": str(runtime.version),
        }

    # runtime endpoints ----------------------------------------------------------------------------

    def _endpoint(self, runtime: AgentRuntime, name: str, version: str) -> RuntimeEndpoint:
        return RuntimeEndpoint(
            name=name,
            arn=f"{runtime.arn}/runtime-endpoint/{name}",
            id=f"{name}-{''.join(secrets.choice(ID_ALPHABET) for _ in range(10))}",
            target_version=version,
        )

    def endpoint_view(self, runtime: AgentRuntime, endpoint: RuntimeEndpoint) -> dict[str, Any]:
        status = runtime.status if runtime.status in {"DELETING", "CREATING", "CREATE_FAILED"} else "READY"
        out: dict[str, Any] = {
            "name": endpoint.name,
            "liveVersion": endpoint.target_version,
            "targetVersion": endpoint.target_version,
            "agentRuntimeEndpointArn": endpoint.arn,
            "agentRuntimeArn": runtime.arn,
            "status": status,
            "id": endpoint.id,
            "createdAt": iso(endpoint.created),
            "lastUpdatedAt": iso(endpoint.modified),
        }
        if endpoint.description:
            out["description"] = endpoint.description
        return out

    def CreateAgentRuntimeEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime = self._runtime(body)
        name = required_string(body, "name", ENDPOINT_NAME_RE)
        if name in runtime.endpoints:
            raise conflict(f"An endpoint named {name} already exists on agent runtime {runtime.id}")
        version = str(body.get("agentRuntimeVersion") or runtime.version)
        if version != str(runtime.version):
            raise field_error(
                "agentRuntimeVersion",
                f"version {version} of {runtime.id} is not available (the emulator keeps only the latest, "
                f"{runtime.version})",
            )
        endpoint = self._endpoint(runtime, name, version)
        description = body.get("description")
        endpoint.description = description if isinstance(description, str) else None
        runtime.endpoints[name] = endpoint
        view = self.endpoint_view(runtime, endpoint)
        return {
            "targetVersion": version,
            "agentRuntimeEndpointArn": endpoint.arn,
            "agentRuntimeArn": runtime.arn,
            "agentRuntimeId": runtime.id,
            "endpointName": name,
            "status": view["status"],
            "createdAt": view["createdAt"],
        }

    def _named_endpoint(self, body: Mapping[str, Any]) -> tuple[AgentRuntime, RuntimeEndpoint]:
        runtime = self._runtime(body)
        name = required_string(body, "endpointName", ENDPOINT_NAME_RE)
        endpoint = runtime.endpoints.get(name)
        if endpoint is None:
            raise not_found(f"Endpoint {name} not found on agent runtime {runtime.id}")
        return runtime, endpoint

    def GetAgentRuntimeEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.endpoint_view(*self._named_endpoint(body))

    def ListAgentRuntimeEndpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime = self._runtime(body)
        views = [self.endpoint_view(runtime, e) for e in runtime.endpoints.values()]
        return _page(views, "runtimeEndpoints", body)

    def DeleteAgentRuntimeEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        runtime, endpoint = self._named_endpoint(body)
        if endpoint.name == DEFAULT_ENDPOINT:
            raise field_error("endpointName", "the DEFAULT endpoint cannot be deleted")
        del runtime.endpoints[endpoint.name]
        return {"status": "DELETING", "agentRuntimeId": runtime.id, "endpointName": endpoint.name}


def _whole(body: Mapping[str, Any], name: str, default: int) -> int:
    """A whole-number member: an int in the JSON body, digits in the query string."""
    value = body.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) <= 18:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise field_error(name, f"Member must be a whole number, got {type(value).__name__}")


def _page(items: list[dict[str, Any]], key: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """`maxResults` items from the offset in `nextToken`."""
    size, start = _whole(body, "maxResults", 100), _whole(body, "nextToken", 0)
    if not 1 <= size <= 100:
        raise field_error("maxResults", "Member must have value between 1 and 100")
    if start < 0:
        raise field_error("nextToken", "not a token this API returned")
    out: dict[str, Any] = {key: items[start : start + size]}
    if start + size < len(items):
        out["nextToken"] = str(start + size)
    return out
