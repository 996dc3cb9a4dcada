"""Pick the variant and the replica that serve one invocation or session.

Variant: the `X-Amzn-SageMaker-Target-Variant` header when given, else a weighted random choice
(InitialVariantWeight). Replica: as the variant's `RoutingConfig.RoutingStrategy` says, as SageMaker
does: RANDOM (its default) any ready one; LEAST_OUTSTANDING_REQUESTS the ready one with the fewest
invocations and sessions in flight, ties broken round-robin, so consecutive and concurrent sessions
spread across replicas (a speech session holds its replica for its whole answer, so a random pick
can put two listeners on one replica while another idles: deploy/ sets this one).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from emulator.controller.store import (
    LEAST_OUTSTANDING_REQUESTS,
    Endpoint,
    Replica,
    Store,
    VariantDeployment,
)


class RoutingError(Exception):
    """Why nothing can serve the request; `kind` tells the services which AWS error to answer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class Lease:
    """One invocation or session in flight on a replica (the router picks the replica with the fewest).
    Taken when the work starts; `release()` may be called on every exit path, only the first counts."""

    def __init__(self, replica: Replica) -> None:
        self._replica: Replica | None = replica
        replica.sessions += 1

    def release(self) -> None:
        if self._replica is not None:
            self._replica.sessions -= 1
            self._replica = None


@dataclass(frozen=True)
class Route:
    endpoint: Endpoint
    deployed: VariantDeployment
    replica: Replica

    def lease(self) -> Lease:
        return Lease(self.replica)


class Router:
    def __init__(self, store: Store, account_id: str) -> None:
        self.store = store
        self.account_id = account_id
        self._turn = itertools.count()
        self._random = random.Random()

    def endpoint(self, name: str) -> Endpoint:
        ep = self.store.endpoints.get(name)
        if ep is None or ep.current is None or ep.status == "Deleting":
            raise RoutingError("unknown_endpoint", f"Endpoint {name} of account {self.account_id} not found.")
        return ep

    def route(self, name: str, target_variant: str | None) -> Route:
        ep = self.endpoint(name)
        assert ep.current is not None
        variants = ep.current.variants
        if target_variant:
            if target_variant not in variants:
                raise RoutingError(
                    "unknown_variant", f"Target variant {target_variant} does not exist on endpoint {name}."
                )
            deployed = variants[target_variant]
        else:
            deployed = self._weighted([v for v in variants.values() if any(r.ready for r in v.replicas)])
            if deployed is None:
                deployed = next(iter(variants.values()))
        ready = [r for r in deployed.replicas if r.ready]
        if not ready:
            raise RoutingError(
                "no_replica", f"No healthy instance of variant {deployed.variant.name} on endpoint {name}."
            )
        if deployed.variant.routing == LEAST_OUTSTANDING_REQUESTS:
            turn = next(self._turn)
            replica = min(ready, key=lambda r: (r.sessions, (ready.index(r) - turn) % len(ready)))
        else:
            replica = self._random.choice(ready)
        return Route(ep, deployed, replica)

    def _weighted(self, candidates: list[VariantDeployment]) -> VariantDeployment | None:
        if not candidates:
            return None
        weights = [v.variant.weight for v in candidates]
        if sum(weights) <= 0:
            return self._random.choice(candidates)
        return self._random.choices(candidates, weights=weights)[0]
