"""The operator's routes (`/_emulator/...`, not an AWS API, never signed): every one lives here.

- `GET /_emulator/status`: endpoints, agent runtimes, replicas, health and recent events as JSON; what
  `python -m emulator status` prints and what tests inspect (for example, the pid of a replica to kill).
- `GET /_emulator/metrics?window_s=600`: every metric the emulator's CloudWatch holds with data in the
  window and its statistics (count, average, p50, p90, p99, maximum): what `python -m emulator metrics`
  prints. The status carries the last minute's first audio (p50, p90) and stalls of the tts replicas.
- `POST /_emulator/otlp/v1/traces` (OTLP/HTTP, protobuf or JSON), `GET /_emulator/traces?limit=10`: the
  spans the replicas export (emulator/traces.py), what `python -m emulator traces` shows as timelines.
- `GET /_emulator/bedrock/requests`: the model requests Bedrock answered, oldest first
  (emulator/services/bedrock/request_log.py), which tests read to see the history a request carried.

Each ready endpoint replica's `load` in the status is what its `GET /ping` says at that moment (the tts
container: sessions playing, how many it keeps gap-free, whether it is saturated), or null when it says
nothing or does not answer within LOAD_TIMEOUT_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import httpx
from quart import Blueprint, Response, request

from emulator.controller.store import (
    AgentRuntime,
    Deployment,
    Endpoint,
    Replica,
    ScalableTarget,
    Stack,
    Store,
)
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.cloudwatch.runtime import Metrics
from emulator.traces import BadSpans, Traces
from facts import FIRST_AUDIO_METRIC, METRICS_NAMESPACE, STALLS_METRIC

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


def last_minute(metrics: Metrics) -> dict[str, Any]:
    """The tts replicas' first audio (ms) and stalls over the last 60 s, from their EMF lines."""

    def stat(name: str, statistic: str) -> float | None:
        return metrics.recent(METRICS_NAMESPACE, name, statistic, 60, Service="tts")

    return {
        "first_audio_ms_p50": stat(FIRST_AUDIO_METRIC, "p50"),
        "first_audio_ms_p90": stat(FIRST_AUDIO_METRIC, "p90"),
        "requests": stat(FIRST_AUDIO_METRIC, "SampleCount") or 0,
        "stalls": stat(STALLS_METRIC, "Sum") or 0,
    }


def admin_blueprint(
    store: Store,
    info: Callable[[], dict[str, Any]],
    bedrock_requests: RequestLog,
    metrics: Metrics | None = None,
    traces: Traces | None = None,
) -> Blueprint:
    bp = Blueprint("emulator_admin", __name__)
    metrics = metrics or Metrics()
    traces = traces or Traces()

    @bp.post("/_emulator/otlp/v1/traces")
    async def receive_spans() -> Response:
        body = await request.get_data()
        try:
            traces.receive(body, request.headers.get("content-type", "application/x-protobuf"))
        except BadSpans as exc:
            return Response(json.dumps({"error": str(exc)}), 400, content_type="application/json")
        if request.headers.get("content-type", "").startswith("application/json"):
            return Response("{}", content_type="application/json")
        return Response(b"", content_type="application/x-protobuf")  # an empty ExportTraceServiceResponse

    @bp.get("/_emulator/traces")
    async def get_traces() -> Response:
        limit = request.args.get("limit", "10")
        if not limit.isdigit() or not 0 < int(limit) <= 1000:
            return Response(json.dumps({"error": "limit is a whole number from 1 to 1000"}), 400)
        return Response(json.dumps(traces.recent(int(limit))), content_type="application/json")

    @bp.get("/_emulator/status")
    async def get_status() -> dict[str, Any]:
        return {**status(store, info(), await replica_loads(store)), "last_minute": last_minute(metrics)}

    @bp.get("/_emulator/metrics")
    async def get_metrics() -> Response:
        try:
            window_s = float(request.args.get("window_s", "600"))
        except ValueError:
            window_s = -1
        if not 0 < window_s <= 86_400:
            return Response(json.dumps({"error": "window_s is seconds, over 0 and at most 86400"}), 400)
        summary = await metrics.summary(window_s)
        return Response(json.dumps(summary, allow_nan=False), content_type="application/json")

    @bp.get("/_emulator/bedrock/requests")
    async def recorded_requests() -> Response:
        return Response(json.dumps(bedrock_requests.entries()), content_type="application/json")

    return bp
