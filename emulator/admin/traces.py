"""The emulator's trace collector: OTLP/HTTP spans from the replicas (the agent's turns), kept for the
operator (`POST /_emulator/otlp/v1/traces`, `GET /_emulator/traces`, `python -m emulator traces`).

On AWS, AgentCore observability takes the agent's OpenTelemetry spans through ADOT; here AgentCore gives
each runtime `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at this collector (the SDK's OTLP/HTTP exporter adds
`/v1/traces`). Both OTLP/HTTP encodings are read: protobuf (`application/x-protobuf`, the SDK's default)
and JSON (`application/json`, ids in hex as OTLP/JSON has them). Spans are kept flat, the last MAX_SPANS
of them; a trace is the spans sharing a trace id, shown as a timeline from its earliest start.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

MAX_SPANS = 20_000  # a turn has a few dozen spans: hundreds of turns


class BadSpans(ValueError):
    """A body that is not an OTLP export request in the encoding it declares."""


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    service: str
    attributes: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind in (None, "kvlist_value", "bytes_value"):
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind)


def _json_value(value: dict[str, Any]) -> Any:
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_json_value(v) for v in value["arrayValue"].get("values", [])]
    return None


def from_protobuf(body: bytes) -> list[Span]:
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except Exception as exc:  # protobuf's DecodeError, and what a truncated body raises
        raise BadSpans(f"not an OTLP protobuf export request: {exc}") from exc
    spans = []
    for resource in request.resource_spans:
        resource_attrs = {a.key: _value(a.value) for a in resource.resource.attributes}
        service = str(resource_attrs.get("service.name") or "unknown")
        for scope in resource.scope_spans:
            for span in scope.spans:
                spans.append(
                    Span(
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                        span.name,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        service,
                        {a.key: _value(a.value) for a in span.attributes},
                    )
                )
    return spans


def from_json(body: bytes) -> list[Span]:
    try:
        request = json.loads(body)
        spans = []
        for resource in request.get("resourceSpans", []):
            attrs = resource.get("resource", {}).get("attributes", [])
            resource_attrs = {a["key"]: _json_value(a.get("value", {})) for a in attrs}
            service = str(resource_attrs.get("service.name") or "unknown")
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    spans.append(
                        Span(
                            str(span["traceId"]).lower(),
                            str(span["spanId"]).lower(),
                            str(span.get("parentSpanId", "")).lower(),
                            str(span["name"]),
                            int(span["startTimeUnixNano"]),
                            int(span["endTimeUnixNano"]),
                            service,
                            {a["key"]: _json_value(a.get("value", {})) for a in span.get("attributes", [])},
                        )
                    )
        return spans
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadSpans(f"not an OTLP JSON export request: {exc!r}") from exc


class Traces:
    def __init__(self) -> None:
        self._spans: deque[Span] = deque(maxlen=MAX_SPANS)

    def receive(self, body: bytes, content_type: str) -> int:
        """One OTLP/HTTP export request; returns the spans kept."""
        spans = (
            from_json(body)
            if content_type.split(";")[0].strip() == "application/json"
            else from_protobuf(body)
        )
        self._spans.extend(spans)
        return len(spans)

    def recent(self, limit: int = 10) -> list[dict[str, Any]]:
        """The last `limit` traces, newest last, each with its spans by start time and offsets in ms."""
        order: list[str] = []
        by_trace: dict[str, list[Span]] = {}
        for span in self._spans:
            if span.trace_id not in by_trace:
                order.append(span.trace_id)
            by_trace.setdefault(span.trace_id, []).append(span)
        traces = []
        for trace_id in order[-limit:]:
            spans = sorted(by_trace[trace_id], key=lambda s: (s.start_ns, -s.end_ns))
            origin = spans[0].start_ns
            traces.append(
                {
                    "trace_id": trace_id,
                    "spans": [
                        {
                            **asdict(s),
                            "start_ms": round((s.start_ns - origin) / 1e6, 1),
                            "duration_ms": round((s.end_ns - s.start_ns) / 1e6, 1),
                        }
                        for s in spans
                    ],
                }
            )
        return traces
