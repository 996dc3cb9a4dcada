"""`python -m emulator up --detach | status | logs | env | down`, run as a user would, on echo replicas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
import yaml

from tests.emulator.support import endpoint, model, process_gone, variant

pytestmark = pytest.mark.integration  # real servers: the emulator, test containers, official clients

REPO = Path(__file__).resolve().parents[2]
ECHO_RUNTIME = {  # the echo container answers /ping and /invocations: enough for an agent runtime replica
    "agentRuntimeName": "echo_agent",
    "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "echo:latest"}},
    "roleArn": "arn:aws:iam::123456789012:role/echo",
}


def run(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "EMULATOR_HOME": str(home),
        "EMULATOR_STOP_GRACE_S": "2",
        "EMULATOR_RECONCILE_INTERVAL_S": "0.1",
        "EMULATOR_LLM_BACKEND": "script",  # no model loading in the background
    }
    return subprocess.run(
        [sys.executable, "-m", "emulator", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_build_takes_build_arguments_as_docker_build_does(tmp_path: Path) -> None:
    """`--build-arg NAME=VALUE`, refused before any engine is asked when it is not one."""
    for wrong, said in (
        ("PACKAGE", "--build-arg takes NAME=VALUE, got 'PACKAGE'"),
        ("BASE_IMAGE=x", "BASE_IMAGE"),
    ):
        result = run(
            tmp_path,
            "build",
            "--dockerfile",
            "container_kit/Dockerfile",
            "--tag",
            "t:1",
            "--build-arg",
            wrong,
        )
        assert (result.returncode, said in result.stderr) == (1, True), result.stderr


def test_env_without_a_running_emulator_fails_clearly(tmp_path: Path) -> None:
    result = run(tmp_path, "env")
    assert result.returncode == 1
    assert "no running emulator" in result.stderr


def test_detached_emulator_lifecycle(tmp_path: Path) -> None:
    manifest = tmp_path / "echo.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "resources": [
                    model("echo", "echo:latest"),
                    *endpoint("echo", [variant("AllTraffic", "echo", count=2)]),
                    {"kind": "AgentRuntime", "spec": ECHO_RUNTIME},
                ]
            }
        )
    )
    up = run(tmp_path, "up", "--detach", "-f", str(manifest), "--http-port", "0", "--h2-port", "0")
    assert up.returncode == 0, up.stderr
    try:
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in up.stdout.splitlines()
            if line.startswith("export ")
        )
        assert set(exports) >= {
            "AWS_ENDPOINT_URL_SAGEMAKER",
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME",
            "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2",
            "AWS_CA_BUNDLE",
            "AWS_REGION",
        }
        assert exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"].startswith("https://localhost:")
        assert Path(exports["AWS_CA_BUNDLE"]).is_file()

        env_lines = run(tmp_path, "env")
        assert env_lines.stdout.strip() == "\n".join(
            line for line in up.stdout.splitlines() if line.startswith("export ")
        )

        client = boto3.client(
            "sagemaker-runtime",
            endpoint_url=exports["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"],
            region_name=exports["AWS_REGION"],
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        assert client.invoke_endpoint(EndpointName="echo", Body=b"cli")["Body"].read() == b"cli"

        table = run(tmp_path, "status")
        assert table.returncode == 0
        assert "echo" in table.stdout and "InService" in table.stdout and "2/2" in table.stdout
        status = json.loads(run(tmp_path, "status", "--json").stdout)
        pids = [r["pid"] for r in status["endpoints"][0]["replicas"]]
        emulator_pid = status["emulator"]["pid"]
        assert len(pids) == 2
        [runtime] = status["agent_runtimes"]
        assert runtime["status"] == "READY"
        runtime_replica = runtime["replicas"][0]["id"]
        pids.append(runtime["replicas"][0]["pid"])

        logs = run(tmp_path, "logs", "-n", "5")
        assert logs.returncode == 0, logs.stderr
        headers = [line for line in logs.stdout.splitlines() if line.startswith("==> ")]
        replica_ids = [r["id"] for r in status["endpoints"][0]["replicas"]] + [runtime_replica]
        assert [h.split()[1] for h in headers] == replica_ids, "every replica, the agent runtime's too"
        one = run(tmp_path, "logs", runtime_replica)
        assert one.returncode == 0 and one.stdout.startswith(f"==> {runtime_replica} (")
        unknown = run(tmp_path, "logs", "no-such-replica")
        assert unknown.returncode == 1 and runtime_replica in unknown.stderr
    finally:
        down = run(tmp_path, "down")
    assert down.returncode == 0
    assert "stopped" in down.stderr
    assert process_gone(emulator_pid)
    assert all(process_gone(pid) for pid in pids)
    assert not (tmp_path / "emulator.json").exists()
