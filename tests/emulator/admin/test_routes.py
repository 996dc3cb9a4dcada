"""The operator's routes: the status reads each ready replica's load from its `/ping`, and shows the
dashboards CloudWatch holds, whatever they name, with each metric's latest value."""

from __future__ import annotations

import json
import time


async def test_the_status_reads_each_ready_replicas_load_from_its_ping() -> None:
    """admin.status.replica_loads asks every ready endpoint replica's /ping; one that says nothing of its
    load, answers no JSON object or does not answer is left out (the status then shows "-")."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from emulator.admin.status import replica_loads
    from emulator.processes import free_port

    load = {"sessions": 4, "capacity": 3, "saturated": True}
    servers = []

    def replica(name: str, answer: object, ready: bool = True) -> SimpleNamespace:
        class Ping(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Ping)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return SimpleNamespace(id=name, ready=ready, address=server.server_address)

    try:
        replicas = [
            replica("loaded", {"status": "ok", "load": load}),
            replica("silent", {"status": "ok"}),
            replica("a-list", [1, 2]),
            replica("not-ready", {"status": "ok", "load": load}, ready=False),
            SimpleNamespace(id="gone", ready=True, address=("127.0.0.1", free_port())),
        ]
        deployment = SimpleNamespace(replicas=lambda: replicas)
        store = SimpleNamespace(endpoints={"tts": SimpleNamespace(current=deployment, pending=None)})
        assert await replica_loads(store) == {"loaded": load}
    finally:
        for server in servers:
            server.shutdown()


def dashboard(*widgets: dict) -> str:
    return json.dumps({"widgets": list(widgets)})


async def test_the_metrics_route_and_the_status_show_what_cloudwatch_holds() -> None:
    """`/_emulator/metrics` (what `python -m emulator metrics` prints) summarizes every metric with data;
    the status shows each dashboard PutDashboard stored, row by row, each metric's statistic over its
    last period: the emulator names no metric of its own."""
    from quart import Quart

    from emulator.admin.routes import admin_blueprint
    from emulator.cli.views import format_metrics, format_status
    from emulator.controller.store import Store
    from emulator.services.bedrock.request_log import RequestLog
    from emulator.services.cloudwatch.control import CloudWatchControl
    from emulator.services.cloudwatch.runtime import Metrics

    cloudwatch = CloudWatchControl(Metrics(), "us-east-1", "123456789012")
    tts = [{"Name": "Service", "Value": "tts"}]
    data = [{"MetricName": "FirstByte", "Dimensions": tts, "Values": [200.0, 300.0, 400.0]}]
    data.append({"MetricName": "Gaps", "Dimensions": tts, "Values": [0.0, 2.0, 1.0]})
    cloudwatch.metrics.PutMetricData({"Namespace": "Shop", "MetricData": data})
    old = {"MetricName": "M", "Value": 1.0, "Timestamp": time.time() - 3600}
    cloudwatch.metrics.PutMetricData({"Namespace": "Old", "MetricData": [old]})
    first_byte = {
        "title": "First byte (ms)",
        "stat": "p50",
        "period": 60,
        "metrics": [
            ["Shop", "FirstByte", "Service", "tts", {"label": "p50"}],
            [".", ".", ".", ".", {"stat": "p90", "label": "p90"}],
            ["...", "agent", {"label": "none yet"}],
            [{"expression": "m1 * 2", "label": "math"}],
            ["Shop", "FirstByte", "Service", "tts", {"visible": False}],
        ],
    }
    gaps = {"metrics": [["Shop", "Gaps", "Service", "tts", {"stat": "Sum", "period": 300}], ["Shop"]]}
    cloudwatch.PutDashboard(
        {
            "DashboardName": "shop",
            "DashboardBody": dashboard(
                {"type": "text", "properties": {"markdown": "hello"}},
                {"type": "metric", "properties": first_byte},
                {"type": "metric", "properties": gaps},
            ),
        }
    )
    app = Quart("admin-test")
    app.register_blueprint(admin_blueprint(Store(), dict, RequestLog(), cloudwatch))
    client = app.test_client()
    rows = await (await client.get("/_emulator/metrics?window_s=600")).get_json()
    assert [(r["MetricName"], r["SampleCount"], r["p50"]) for r in rows] == [
        ("FirstByte", 3, 300.0),
        ("Gaps", 3, 1.0),
    ]
    assert "FirstByte" in format_metrics(rows, 600) and "Service=tts" in format_metrics(rows, 600)
    assert (await client.get("/_emulator/metrics?window_s=nope")).status_code == 400
    status = await (await client.get("/_emulator/status")).get_json()
    [shown] = status["dashboards"]
    assert shown["name"] == "shop"
    assert [w["title"] for w in shown["widgets"]] == ["First byte (ms)", ""]
    first, second = shown["widgets"]
    assert [(m["label"], m["stat"], m["period_s"], m["value"]) for m in first["metrics"]] == [
        ("p50", "p50", 60, 300.0),
        ("p90", "p90", 60, 400.0),
        ("none yet", "p50", 60, None),
    ]
    assert first["metrics"][2]["Dimensions"] == [{"Name": "Service", "Value": "agent"}]
    assert (second["metrics"][0]["label"], second["metrics"][0]["value"]) == ("Shop Gaps", 3.0)
    assert "namespace, a metric name" in second["metrics"][1]["unread"]
    printed = format_status(status)
    assert "DASHBOARD shop (each metric over its last period)" in printed
    assert "First byte (ms)  p90" in printed and "400" in printed and "unread: a row is" in printed
