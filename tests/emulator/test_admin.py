"""The operator's status reads each ready replica's load from its `/ping`."""

from __future__ import annotations


async def test_the_status_reads_each_ready_replicas_load_from_its_ping() -> None:
    """admin.replica_loads asks every ready endpoint replica's /ping; one that says nothing of its load,
    answers no JSON object or does not answer is left out (the status then shows "-")."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from emulator.admin import replica_loads
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


async def test_the_metrics_route_and_the_status_summarize_what_cloudwatch_holds() -> None:
    """`/_emulator/metrics` (what `python -m emulator metrics` prints) and the status's last minute of
    the tts replicas' first audio and stalls, from the same store the CloudWatch routes read."""
    import time

    from quart import Quart

    from emulator.admin import admin_blueprint
    from emulator.controller.store import Store
    from emulator.services.bedrock.request_log import RequestLog
    from emulator.services.cloudwatch.runtime import Metrics
    from emulator.status_view import format_metrics, format_status

    metrics = Metrics()
    tts = [{"Name": "Service", "Value": "tts"}]
    data = [{"MetricName": "TimeToFirstAudio", "Dimensions": tts, "Values": [200.0, 300.0, 400.0]}]
    data.append({"MetricName": "Stalls", "Dimensions": tts, "Values": [0.0, 2.0, 1.0]})
    metrics.PutMetricData({"Namespace": "VoiceAgent", "MetricData": data})
    metrics.PutMetricData(
        {
            "Namespace": "Old",
            "MetricData": [{"MetricName": "M", "Value": 1.0, "Timestamp": time.time() - 3600}],
        }
    )
    app = Quart("admin-test")
    app.register_blueprint(admin_blueprint(Store(), dict, RequestLog(), metrics))
    client = app.test_client()
    rows = await (await client.get("/_emulator/metrics?window_s=600")).get_json()
    assert [(r["MetricName"], r["SampleCount"], r["p50"]) for r in rows] == [
        ("Stalls", 3, 1.0),
        ("TimeToFirstAudio", 3, 300.0),
    ]
    assert "TimeToFirstAudio" in format_metrics(rows, 600) and "Service=tts" in format_metrics(rows, 600)
    assert (await client.get("/_emulator/metrics?window_s=nope")).status_code == 400
    status = await (await client.get("/_emulator/status")).get_json()
    assert status["last_minute"] == {
        "first_audio_ms_p50": 300.0,
        "first_audio_ms_p90": 400.0,
        "requests": 3,
        "stalls": 3,
    }
    assert "first audio p50 300 ms p90 400 ms  requests 3  stalls 3" in format_status(status)
