"""The status the operator's routes answer (`GET /_emulator/status`, what `python -m emulator status`
prints): endpoints, agent runtimes, replicas, recorded autoscaling, CloudFormation stacks and recent
events, read from the store, and each ready endpoint replica's `load`: what its `GET /ping` says at that
moment (the tts container: sessions playing, how many it keeps gap-free, whether it is saturated), or
null when it says nothing or does not answer within LOAD_TIMEOUT_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import asdict
from typing import Any

import httpx

from emulator.controller.store import (
    AgentRuntime,
    Deployment,
    Endpoint,
    Replica,
    ScalableTarget,
    Stack,
    Store,
)

LOAD_TIMEOUT_S = 1.0  # a replica busy computing still answers /ping within milliseconds (event loop)


def _replica(replica: Replica, role: str) -> dict[str, Any]:
    handle = replica.handle
    return {
        "id": replica.id,
        "variant": replica.variant,
        "deployment": role,
        "phase": replica.phase,
        "ready": replica.ready,
        "restarts": replica.restarts,
        "sessions": replica.sessions,
        "ident": handle.ident if handle is not None else None,
        "pid": getattr(getattr(handle, "process", None), "pid", None),
        "port": handle.port if handle is not None else None,
        "started": replica.started_at or None,
        "exit_code": replica.exit_code,
        "log": str(replica.log_path),
    }


def _variants(deployment: Deployment) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "instance_type": deployed.variant.instance_type,
            "desired": deployed.variant.instance_count,
            "ready": sum(1 for r in deployed.replicas if r.ready),
            "image": deployed.model.image,
        }
        for name, deployed in deployment.variants.items()
    ]


def endpoint_status(ep: Endpoint) -> dict[str, Any]:
    replicas = []
    for role, deployment in (("current", ep.current), ("pending", ep.pending)):
        if deployment is not None:
            replicas += [_replica(r, role) for r in deployment.replicas()]
    shown = ep.current or ep.pending
    return {
        "name": ep.name,
        "status": ep.status,
        "config": ep.config_name,
        "failure_reason": ep.failure_reason,
        "created": ep.created,
        "variants": _variants(shown) if shown is not None else [],
        "replicas": replicas,
    }


def runtime_status(rt: AgentRuntime) -> dict[str, Any]:
    replicas = [_replica(r, role) for role, r in (("current", rt.current), ("pending", rt.pending)) if r]
    return {
        "name": rt.name,
        "id": rt.id,
        "arn": rt.arn,
        "status": rt.status,
        "version": rt.version,
        "platform": rt.platform,
        "failure_reason": rt.failure_reason,
        "created": rt.created,
        "endpoints": sorted(rt.endpoints),
        "replicas": replicas,
    }


def scaling_status(target: ScalableTarget) -> dict[str, Any]:
    """A recorded scalable target and its policies (the emulator does not apply them)."""
    policies = []
    for policy in target.policies.values():
        metric = policy.configuration.get("PredefinedMetricSpecification")
        metric = metric if isinstance(metric, dict) else {}
        policies.append(
            {
                "name": policy.name,
                "type": policy.policy_type,
                "target": policy.configuration.get("TargetValue"),
                "metric": metric.get("PredefinedMetricType", "custom" if policy.configuration else None),
            }
        )
    return {
        "resource": target.resource_id,
        "dimension": target.dimension,
        "min": target.min_capacity,
        "max": target.max_capacity,
        "policies": policies,
    }


def stack_status(stack: Stack) -> dict[str, Any]:
    """A CloudFormation stack: its status, why, and how many of its resources are made."""
    return {
        "name": stack.name,
        "status": stack.status,
        "reason": stack.reason,
        "resources": len(stack.resources),
        "created": stack.created,
    }


async def replica_loads(store: Store) -> dict[str, Any]:
    """Replica id -> the `load` its `GET /ping` reports, for every ready endpoint replica that reports one."""
    ready = [
        replica
        for ep in store.endpoints.values()
        for deployment in (ep.current, ep.pending)
        if deployment is not None
        for replica in deployment.replicas()
        if replica.ready and replica.address is not None
    ]

    async def load(client: httpx.AsyncClient, replica: Replica) -> Any:
        host, port = replica.address
        with contextlib.suppress(httpx.HTTPError, ValueError):
            answer = await client.get(f"http://{host}:{port}/ping", timeout=LOAD_TIMEOUT_S)
            body = answer.json() if answer.status_code == 200 else None
            return body.get("load") if isinstance(body, dict) else None
        return None

    async with httpx.AsyncClient(trust_env=False) as client:
        loads = await asyncio.gather(*(load(client, replica) for replica in ready))
    return {replica.id: value for replica, value in zip(ready, loads, strict=True) if value is not None}


def status(store: Store, info: dict[str, Any], loads: dict[str, Any] | None = None) -> dict[str, Any]:
    loads = loads or {}
    endpoints = [endpoint_status(ep) for ep in store.endpoints.values()]
    for replica in (r for ep in endpoints for r in ep["replicas"]):
        replica["load"] = loads.get(replica["id"])
    return {
        "emulator": {**info, "now": time.time()},
        "endpoints": endpoints,
        "agent_runtimes": [runtime_status(rt) for rt in store.agent_runtimes.values()],
        "autoscaling": [scaling_status(t) for t in store.scalable_targets.values()],
        "stacks": [stack_status(s) for s in store.stacks.values() if s.status != "DELETE_COMPLETE"],
        "events": [asdict(e) for e in store.events.recent(50)],
    }
