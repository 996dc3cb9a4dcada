"""An endpoint's CloudWatch dashboard, as the body `PutDashboard` takes: one writer for both targets.

The Observability stack deploys this body (deploy/stacks/observability.py, `AWS::CloudWatch::Dashboard`)
and the emulator's manifest carries the same one (compose/emulator.yaml, a `Dashboard` resource: the
PutDashboard request), so what a dashboard shows, and which metrics the emulator's status reads, is
said here once. The panels: time to first audio (the container's p50 and p90, the agent's turn p90,
the alarm's threshold), the stalls a listener hears, sessions against the capacity `/ping` claims, the
errors and their share of requests, and SageMaker's invocations per instance.

The container's metrics are its EMF lines (facts.METRICS_NAMESPACE, dimension `Service`), SageMaker's
are `AWS/SageMaker` by endpoint and variant. Plain Python, no CDK: the region is a value the caller gives
(the stack gives CloudFormation's `AWS::Region`).
"""

from __future__ import annotations

from typing import Any

from facts import ERRORS_METRIC, FIRST_AUDIO_METRIC, METRICS_NAMESPACE, OVER_CAPACITY_METRIC, STALLS_METRIC

SAGEMAKER_NAMESPACE = "AWS/SageMaker"
MINUTE_S = 60
WIDTH = 8
HEIGHT = 6
ERROR_RATE = "100 * errors / MAX([errors + requests, 1])"
"""Typed errors as a percentage of requests (a request that failed wrote no first audio)."""


def dashboard_name(endpoint_name: str) -> str:
    return f"{endpoint_name}-voice"


def product_metric(name: str, stat: str, label: str, service: str = "tts", **options: Any) -> list[Any]:
    return [METRICS_NAMESPACE, name, "Service", service, {"stat": stat, "label": label, **options}]


def endpoint_metric(endpoint: tuple[str, str], name: str, stat: str, **options: Any) -> list[Any]:
    """SageMaker's metric `name` of `endpoint` (its name and variant)."""
    dimensions = ["EndpointName", endpoint[0], "VariantName", endpoint[1]]
    return [SAGEMAKER_NAMESPACE, name, *dimensions, {"stat": stat, "label": name, **options}]


def _graph(title: str, metrics: list[list[Any]], region: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "metric",
        "properties": {
            "view": "timeSeries",
            "title": title,
            "region": region,
            "period": MINUTE_S,
            "metrics": metrics,
            **properties,
        },
    }


def _error_rate(endpoint: tuple[str, str]) -> list[list[Any]]:
    """The typed errors, SageMaker's 5xx, and the error rate over five minutes on the right axis."""
    five = 5 * MINUTE_S
    return [
        product_metric(ERRORS_METRIC, "Sum", "typed errors"),
        endpoint_metric(endpoint, "Invocation5XXErrors", "Sum"),
        product_metric(ERRORS_METRIC, "Sum", "errors", id="errors", period=five, visible=False),
        product_metric(
            FIRST_AUDIO_METRIC, "SampleCount", "requests", id="requests", period=five, visible=False
        ),
        [{"expression": ERROR_RATE, "label": "errors (% of requests)", "id": "rate", "yAxis": "right"}],
    ]


def widgets(endpoint: tuple[str, str], region: str, first_audio_alarm_ms: float) -> list[dict[str, Any]]:
    """The panels of `endpoint` (its name and variant), unplaced: `dashboard_body` lays them out."""
    return [
        _graph(
            "Time to first audio (ms)",
            [
                product_metric(FIRST_AUDIO_METRIC, "p50", "tts p50"),
                product_metric(FIRST_AUDIO_METRIC, "p90", "tts p90"),
                product_metric(FIRST_AUDIO_METRIC, "p90", "agent turn p90", service="agent"),
            ],
            region,
            annotations={"horizontal": [{"value": first_audio_alarm_ms, "label": "alarm"}]},
        ),
        _graph(
            "Stalls a listener hears",
            [
                product_metric(STALLS_METRIC, "Sum", "stalls"),
                product_metric("StallSeconds", "Sum", "stall seconds", yAxis="right"),
            ],
            region,
        ),
        _graph(
            "Sessions against capacity (per replica)",
            [
                product_metric("SessionsActive", "Maximum", "sessions"),
                product_metric("Capacity", "Minimum", "capacity"),
                product_metric(OVER_CAPACITY_METRIC, "Maximum", "over capacity"),
                product_metric("QueueWait", "p90", "queue wait p90 (ms)", yAxis="right"),
            ],
            region,
        ),
        _graph("Errors", _error_rate(endpoint), region),
        _graph(
            "Invocations per instance",
            [
                endpoint_metric(endpoint, "InvocationsPerInstance", "Sum"),
                product_metric("RealTimeFactor", "Average", "real-time factor", yAxis="right"),
            ],
            region,
        ),
    ]


def dashboard_body(name: str, variant: str, region: str, first_audio_alarm_ms: float) -> dict[str, Any]:
    """The dashboard of the endpoint `name` (its variant `variant`), three panels to a row (CloudWatch's
    grid is 24 wide)."""
    per_row = 24 // WIDTH
    placed = []
    for index, widget in enumerate(widgets((name, variant), region, first_audio_alarm_ms)):
        row, column = divmod(index, per_row)
        placed.append({**widget, "x": column * WIDTH, "y": row * HEIGHT, "width": WIDTH, "height": HEIGHT})
    return {"widgets": placed}
