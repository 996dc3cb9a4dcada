"""What the replica state machine (reconcile.py) serves, and what differs between its two kinds: a
`Served` subclass each. SageMaker endpoints go Creating/Updating -> InService, or Failed (InService again
when an update fails), a version being a deployment of an endpoint config with a replica set per variant;
AgentCore agent runtimes go CREATING/UPDATING -> READY, or CREATE_FAILED/UPDATE_FAILED, with the reason,
a version being its one replica. Each kind names its statuses, its events' messages and where a startup
timeout comes from.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from emulator.config import EmulatorConfig
from emulator.controller.store import AgentRuntime, Deployment, Endpoint, Replica, Store

PING_FAILURE = (
    "The primary container for production variant {variant} did not pass the ping health check. "
    "Please check CloudWatch logs for this endpoint."
)

RUNTIME_FAILURE = "The agent runtime container did not pass the ping health check on port 8080"


@dataclass(frozen=True)
class ReplicaSet:
    """Replicas of one version that come up together: one variant of an endpoint deployment, or the
    one replica of an agent runtime version."""

    replicas: list[Replica]
    startup_timeout_s: float
    failure: str
    """What a failed start or a startup timeout of these replicas is reported as (the detail follows)."""


class Served[V](ABC):
    """An endpoint or an agent runtime as the replica state machine sees it: the resource, whose
    `current` and `pending` versions are of type V, and what differs between the two kinds."""

    kind: ClassVar[str]
    """For the log."""
    deleting: ClassVar[str]
    """The status that asks for teardown."""
    serving: ClassVar[str]
    """The status once a pending version is promoted."""
    unhealthy: ClassVar[str]
    healthy_again: ClassVar[str]
    """The events' messages when the serving version's replicas stop, and start again, answering /ping."""

    def __init__(self, resource: Endpoint | AgentRuntime, config: EmulatorConfig) -> None:
        self.resource = resource
        self.config = config

    @abstractmethod
    def sets(self, version: V) -> list[ReplicaSet]: ...

    @abstractmethod
    def started(self) -> float:
        """When the pending version began starting (time.monotonic)."""

    @abstractmethod
    def promote(self, version: V) -> tuple[str, str]:
        """Record what promoting `version` changes beyond the shared fields; return the event's reason
        and message."""

    @abstractmethod
    def failed(self) -> tuple[str, str]:
        """The status and the event's reason when the pending version fails (it is already cleared)."""

    @abstractmethod
    def forget(self, store: Store) -> None:
        """Remove the deleted resource from the store (unless a new one of the same name replaced it)."""

    def versions(self) -> list[V]:
        return [v for v in (self.resource.current, self.resource.pending) if v is not None]

    def replicas(self, version: V) -> list[Replica]:
        return [r for replica_set in self.sets(version) for r in replica_set.replicas]


class ServedEndpoint(Served[Deployment]):
    """A SageMaker endpoint: a version is a deployment of an endpoint config, one set per variant."""

    kind = "endpoint"
    deleting = "Deleting"
    serving = "InService"
    unhealthy = "no replica answers /ping"
    healthy_again = "a replica answers /ping again"
    resource: Endpoint

    def sets(self, version: Deployment) -> list[ReplicaSet]:
        return [
            ReplicaSet(
                deployed.replicas,
                deployed.variant.startup_timeout_s or self.config.startup_timeout_s,
                PING_FAILURE.format(variant=name),
            )
            for name, deployed in version.variants.items()
        ]

    def started(self) -> float:
        assert self.resource.pending is not None
        return self.resource.pending.started

    def promote(self, version: Deployment) -> tuple[str, str]:
        self.resource.config_name = version.config.name
        return "InService", f"serving endpoint config {version.config.name}"

    def failed(self) -> tuple[str, str]:
        return ("Failed", "Failed") if self.resource.current is None else ("InService", "UpdateFailed")

    def forget(self, store: Store) -> None:
        if store.endpoints.get(self.resource.name) is self.resource:
            del store.endpoints[self.resource.name]


class ServedRuntime(Served[Replica]):
    """An AgentCore agent runtime: a version is its one replica."""

    kind = "agent runtime"
    deleting = "DELETING"
    serving = "READY"
    unhealthy = "its replica does not answer /ping"
    healthy_again = "its replica answers /ping again"
    resource: AgentRuntime

    def sets(self, version: Replica) -> list[ReplicaSet]:
        return [ReplicaSet([version], self.config.startup_timeout_s, RUNTIME_FAILURE)]

    def started(self) -> float:
        return self.resource.started

    def promote(self, version: Replica) -> tuple[str, str]:
        return "Ready", f"serving version {self.resource.version}"

    def failed(self) -> tuple[str, str]:
        status = "CREATE_FAILED" if self.resource.current is None else "UPDATE_FAILED"
        return status, status

    def forget(self, store: Store) -> None:
        if store.agent_runtimes.get(self.resource.id) is self.resource:
            del store.agent_runtimes[self.resource.id]
