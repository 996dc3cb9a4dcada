"""The operator's routes (`/_emulator/...`, not an AWS API, never signed): every one lives here.

- `GET /_emulator/status`: endpoints, agent runtimes, replicas, health and recent events as JSON
  (status.py), and the dashboards CloudWatch holds with each metric's latest value (dashboards.py):
  what `python -m emulator status` prints and what tests inspect (for example, the pid of a replica to
  kill).
- `GET /_emulator/metrics?window_s=600`: every metric the emulator's CloudWatch holds with data in the
  window and its statistics (count, average, p50, p90, p99, maximum): what `python -m emulator metrics`
  prints.
- `POST /_emulator/otlp/v1/traces` (OTLP/HTTP, protobuf or JSON), `GET /_emulator/traces?limit=10`: the
  spans the replicas export (traces.py), what `python -m emulator traces` shows as timelines.
- `GET /_emulator/bedrock/requests`: the model requests Bedrock answered, oldest first
  (emulator/services/bedrock/request_log.py), which tests read to see the history a request carried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from quart import Blueprint, Response, request

from emulator.admin.dashboards import dashboard_status
from emulator.admin.status import replica_loads, status
from emulator.admin.traces import BadSpans, Traces
from emulator.controller.store import Store
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.cloudwatch.control import CloudWatchControl

JSON = "application/json"


def _refused(message: str) -> Response:
    return Response(json.dumps({"error": message}), 400, content_type=JSON)


def admin_blueprint(
    store: Store,
    info: Callable[[], dict[str, Any]],
    bedrock_requests: RequestLog,
    cloudwatch: CloudWatchControl,
    traces: Traces | None = None,
) -> Blueprint:
    bp = Blueprint("emulator_admin", __name__)
    traces = traces or Traces()

    @bp.post("/_emulator/otlp/v1/traces")
    async def receive_spans() -> Response:
        body = await request.get_data()
        try:
            traces.receive(body, request.headers.get("content-type", "application/x-protobuf"))
        except BadSpans as exc:
            return _refused(str(exc))
        if request.headers.get("content-type", "").startswith(JSON):
            return Response("{}", content_type=JSON)
        return Response(b"", content_type="application/x-protobuf")  # an empty ExportTraceServiceResponse

    @bp.get("/_emulator/traces")
    async def get_traces() -> Response:
        limit = request.args.get("limit", "10")
        if not limit.isdigit() or not 0 < int(limit) <= 1000:
            return _refused("limit is a whole number from 1 to 1000")
        return Response(json.dumps(traces.recent(int(limit))), content_type=JSON)

    @bp.get("/_emulator/status")
    async def get_status() -> Response:
        dashboards = [
            dashboard_status(name, body, cloudwatch.metrics)
            for name, (body, _) in sorted(cloudwatch.dashboards.items())
        ]
        shown = {**status(store, info(), await replica_loads(store)), "dashboards": dashboards}
        return Response(json.dumps(shown, allow_nan=False), content_type=JSON)

    @bp.get("/_emulator/metrics")
    async def get_metrics() -> Response:
        try:
            window_s = float(request.args.get("window_s", "600"))
        except ValueError:
            window_s = -1
        if not 0 < window_s <= 86_400:
            return _refused("window_s is seconds, over 0 and at most 86400")
        summary = await cloudwatch.metrics.summary(window_s)
        return Response(json.dumps(summary, allow_nan=False), content_type=JSON)

    @bp.get("/_emulator/bedrock/requests")
    async def recorded_requests() -> Response:
        return Response(json.dumps(bedrock_requests.entries()), content_type=JSON)

    return bp
