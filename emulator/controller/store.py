"""What the emulator knows: API resources (desired state), replicas (actual state), events.

Everything here is touched from the one event loop that runs the app and the controller, so there
are no locks. An endpoint holds at most two deployments (a deployment = one EndpointConfig made
real): `current` serves traffic; `pending` is being brought up by CreateEndpoint or UpdateEndpoint
and replaces `current` once every one of its replicas answers /ping. An AgentCore agent runtime
works the same way with one replica per version: `current` serves, `pending` is the version that
CreateAgentRuntime or UpdateAgentRuntime is bringing up.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.controller.runtimes import ReplicaHandle


@dataclass(frozen=True)
class Model:
    """A model as the controller runs it: an image, its environment and its model data (a SageMaker
    Model; AgentCore makes one for each agent runtime version). `request` is the API call that made it."""

    name: str
    arn: str
    image: str
    environment: dict[str, str]
    model_data: str | None
    created: float
    request: dict[str, Any]


# `ProductionVariant.RoutingConfig.RoutingStrategy` values the router honours (botocore also lists
# PREFIX_AWARE and KV_AWARE, for LLM containers: refused as not emulated).
RANDOM = "RANDOM"
LEAST_OUTSTANDING_REQUESTS = "LEAST_OUTSTANDING_REQUESTS"
ROUTING_STRATEGIES = (RANDOM, LEAST_OUTSTANDING_REQUESTS)


@dataclass(frozen=True)
class Variant:
    """A production variant of an endpoint configuration: which model, on how many replicas."""

    name: str
    model_name: str
    instance_type: str
    instance_count: int
    weight: float
    startup_timeout_s: float | None
    request: dict[str, Any]
    routing: str = RANDOM
    """`RoutingConfig.RoutingStrategy`, one of ROUTING_STRATEGIES (RANDOM is AWS's default)."""


@dataclass(frozen=True)
class EndpointConfig:
    """A SageMaker endpoint configuration: what a deployment of an endpoint runs."""

    name: str
    arn: str
    variants: tuple[Variant, ...]
    created: float
    request: dict[str, Any]


@dataclass(eq=False)
class Replica:
    """One running (or about to run) model container."""

    id: str
    endpoint: str
    variant: str
    model: Model
    log_path: Path
    container_args: tuple[str, ...] = ("serve",)
    """Arguments after the image: SageMaker runs `IMAGE serve`, AgentCore the image's own command."""
    phase: str = "Pending"
    """Pending -> Starting -> Running -> (Terminating ->) Exited."""
    handle: ReplicaHandle | None = None
    ready: bool = False
    restarts: int = 0
    started_at: float = 0.0
    exited_at: float | None = None
    exit_code: int | None = None
    sessions: int = 0
    """Bidirectional sessions and invocations in flight (routing picks the least busy)."""
    start_error: str | None = None
    failed_probes: int = 0
    """Consecutive /ping probes without a 200 since it was last ready."""
    starter: asyncio.Task[None] | None = field(default=None, repr=False)
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int] | None:
        return (self.handle.host, self.handle.port) if self.handle is not None else None


@dataclass(eq=False)
class VariantDeployment:
    variant: Variant
    model: Model
    replicas: list[Replica]


@dataclass(eq=False)
class Deployment:
    config: EndpointConfig
    variants: dict[str, VariantDeployment]
    started: float = field(default_factory=time.monotonic)

    def replicas(self) -> Iterator[Replica]:
        for deployed in self.variants.values():
            yield from deployed.replicas


@dataclass(eq=False)
class Endpoint:
    name: str
    arn: str
    config_name: str
    status: str = "Creating"
    failure_reason: str | None = None
    created: float = field(default_factory=time.time)
    modified: float = field(default_factory=time.time)
    current: Deployment | None = None
    pending: Deployment | None = None
    deleting: asyncio.Task[None] | None = field(default=None, repr=False)
    healthy: bool = True


@dataclass(eq=False)
class RuntimeEndpoint:
    """A named AgentCore runtime endpoint (a qualifier); `DEFAULT` always exists."""

    name: str
    arn: str
    id: str
    target_version: str
    description: str | None = None
    created: float = field(default_factory=time.time)
    modified: float = field(default_factory=time.time)


@dataclass(eq=False)
class AgentRuntime:
    """An AgentCore agent runtime: the API's fields and the replica serving each version."""

    id: str
    name: str
    arn: str
    request: dict[str, object]
    """The last CreateAgentRuntime/UpdateAgentRuntime request (what GetAgentRuntime echoes)."""
    version: int = 1
    status: str = "CREATING"
    """CREATING | UPDATING -> READY, or CREATE_FAILED | UPDATE_FAILED; DELETING, then gone."""
    failure_reason: str | None = None
    created: float = field(default_factory=time.time)
    modified: float = field(default_factory=time.time)
    current: Replica | None = None
    pending: Replica | None = None
    started: float = field(default_factory=time.monotonic)
    """When the pending version began starting (for the startup timeout)."""
    endpoints: dict[str, RuntimeEndpoint] = field(default_factory=dict)
    deleting: asyncio.Task[None] | None = field(default=None, repr=False)
    healthy: bool = True
    platform: str | None = None
    """What its image is built for, as the engine said when the version was made (`linux/arm64`, or
    `linux/amd64 for linux/arm64` for an image the emulator built in place of an arm64 one); None where
    the runtime cannot tell (local commands)."""


@dataclass
class ScalingPolicy:
    name: str
    arn: str
    policy_type: str
    """TargetTrackingScaling or StepScaling."""
    configuration: dict[str, Any]
    """The policy's configuration member, as the client sent it."""
    created: float = field(default_factory=time.time)


@dataclass
class ScalableTarget:
    """An Application Auto Scaling target: recorded and shown, never applied (the emulator runs the
    instance count that the endpoint's config names)."""

    namespace: str
    resource_id: str
    dimension: str
    min_capacity: int
    max_capacity: int
    arn: str
    created: float = field(default_factory=time.time)
    policies: dict[str, ScalingPolicy] = field(default_factory=dict)


@dataclass
class StackResource:
    """One resource of a CloudFormation stack: its physical id once made, and how to delete it."""

    logical_id: str
    type: str
    physical_id: str = ""
    status: str = "CREATE_IN_PROGRESS"
    reason: str | None = None
    updated: float = field(default_factory=time.time)
    undo: tuple[Any, ...] = ()
    """What deletes it, in order (the CloudFormation service's own steps)."""
    retain: bool = False
    """`DeletionPolicy: Retain`: left in place when the stack is deleted."""


@dataclass(frozen=True)
class StackEvent:
    id: str
    logical_id: str
    physical_id: str
    type: str
    status: str
    reason: str | None
    time: float = field(default_factory=time.time)


@dataclass
class Stack:
    """A CloudFormation stack: its template, its resources in creation order and its events."""

    name: str
    id: str
    template: dict[str, Any]
    parameters: dict[str, str]
    status: str = "CREATE_IN_PROGRESS"
    reason: str | None = None
    created: float = field(default_factory=time.time)
    deleted: float | None = None
    disable_rollback: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Output key -> (value, export name or None)."""
    resources: dict[str, StackResource] = field(default_factory=dict)
    events: list[StackEvent] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    """The local image tags built for the stack's image assets (removed with it)."""
    task: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Event:
    time: float
    type: str
    """Normal or Warning, as in Kubernetes."""
    reason: str
    object: str
    message: str


class EventLog:
    def __init__(self, size: int = 500) -> None:
        self._events: deque[Event] = deque(maxlen=size)

    def add(self, type_: str, reason: str, obj: str, message: str) -> None:
        self._events.append(Event(time.time(), type_, reason, obj, message))

    def recent(self, count: int = 50) -> list[Event]:
        return list(self._events)[-count:]


@dataclass
class Store:
    models: dict[str, Model] = field(default_factory=dict)
    configs: dict[str, EndpointConfig] = field(default_factory=dict)
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    agent_runtimes: dict[str, AgentRuntime] = field(default_factory=dict)
    """By agentRuntimeId."""
    scalable_targets: dict[tuple[str, str, str], ScalableTarget] = field(default_factory=dict)
    """By (service namespace, resource id, scalable dimension)."""
    stacks: dict[str, Stack] = field(default_factory=dict)
    """CloudFormation's stacks by StackId, deleted ones included (as ListStacks shows them)."""
    events: EventLog = field(default_factory=EventLog)


def new_deployment(config: EndpointConfig, models: dict[str, Model], endpoint: str, logs: Path) -> Deployment:
    """Replicas (not yet started) for every variant of `config`, with fresh ids."""
    suffix = secrets.token_hex(2)
    variants: dict[str, VariantDeployment] = {}
    for variant in config.variants:
        model = models[variant.model_name]
        replicas = []
        for slot in range(variant.instance_count):
            replica_id = f"{endpoint}-{variant.name}-{suffix}-{slot}".lower()
            replicas.append(
                Replica(
                    id=replica_id,
                    endpoint=endpoint,
                    variant=variant.name,
                    model=model,
                    log_path=logs / endpoint / f"{replica_id}.log",
                )
            )
        variants[variant.name] = VariantDeployment(variant, model, replicas)
    return Deployment(config, variants)
