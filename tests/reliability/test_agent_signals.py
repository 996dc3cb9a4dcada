"""Every local entry point stops everything it started on SIGTERM, as on Ctrl-C (SIGINT).

Real processes: the signal goes to the entry point alone (not its process group, which would reach
the children directly), then the test checks that the children are gone and their ports free.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from emulator.processes import free_port, wait_http_ok
from tests.reliability.emulator_support import port_free, say, stops_everything
from tests.support.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

ECHO_MANIFEST = """
resources:
  - kind: Model
    spec: {ModelName: echo, PrimaryContainer: {Image: echo:latest}}
  - kind: EndpointConfig
    spec:
      EndpointConfigName: echo
      ProductionVariants:
        - {VariantName: AllTraffic, ModelName: echo, InstanceType: ml.g5.xlarge, InitialInstanceCount: 2}
  - kind: Endpoint
    spec: {EndpointName: echo, EndpointConfigName: echo}
"""


def _start(argv: list[str], tmp_path: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=REPO,
        env={**os.environ, "EMULATOR_HOME": str(tmp_path / "home"), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_emulator_up_in_the_foreground_stops_its_replicas(tmp_path: Path, sig: signal.Signals) -> None:
    manifest = tmp_path / "echo.yaml"
    manifest.write_text(ECHO_MANIFEST)
    http_port = free_port()
    up = _start(
        ["-m", "emulator", "up", "-f", str(manifest), "--http-port", str(http_port), "--h2-port", "0"],
        tmp_path,
        EMULATOR_STOP_GRACE_S="5",
    )
    try:
        wait_http_ok(f"http://127.0.0.1:{http_port}/_emulator/status", 60, up)
        for _ in range(300):
            status = httpx.get(f"http://127.0.0.1:{http_port}/_emulator/status", timeout=5).json()
            if all(r["ready"] for ep in status["endpoints"] for r in ep["replicas"]) and status["endpoints"]:
                break
            time.sleep(0.1)
        happened = stops_everything(up, sig, timeout_s=30)
    finally:
        if up.poll() is None:
            up.kill()
    say(f"{sig.name} to `python -m emulator up` (2 echo replicas)", happened)
    assert up.returncode == 0


@pytest.mark.timeout(60)
def test_agent_serve_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    agent = _start(["-m", "agent", "serve", "--port", str(port)], tmp_path)
    try:
        wait_http_ok(f"http://127.0.0.1:{port}/ping", 40, agent)
        agent.send_signal(signal.SIGTERM)
        agent.wait(20)
    finally:
        if agent.poll() is None:
            agent.kill()
    say("SIGTERM to `python -m agent serve`", f"exit {agent.returncode}; port {port} free: {port_free(port)}")
    assert port_free(port)


# slow: the whole stack started and stopped (20 s); each server's own SIGTERM is a test above.
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_local_stack_serve_stops_the_agent_and_the_emulator_on_sigterm(tmp_path: Path) -> None:
    """The whole local stack (real Kokoro replica, the agent as the AgentCore runtime's replica): SIGTERM
    while it serves the web page."""
    local = subprocess.Popen(
        [sys.executable, "-m", "local_stack", "--serve", "--runs", "1", "--out", str(tmp_path / "a.wav")],
        cwd=REPO,
        env={**os.environ, "EMULATOR_HOME": str(tmp_path / "home"), "EMULATOR_LLM_BACKEND": "script"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert local.stdout is not None
        serving = next((line for line in local.stdout if line.startswith("web page: ")), None)
        assert serving is not None, f"the local stack ended before serving (exit {local.poll()})"
        port = int(serving.split()[2].rstrip("/").rsplit(":", 1)[1])
        wait_http_ok(f"http://127.0.0.1:{port}/ping", 30, local)
        happened = stops_everything(local, signal.SIGTERM, timeout_s=60)
    finally:
        if local.poll() is None:
            local.kill()
    say("SIGTERM to `python -m local_stack --serve`", happened)
