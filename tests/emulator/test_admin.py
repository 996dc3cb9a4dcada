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
