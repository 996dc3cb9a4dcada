"""The `docker` runtime on a real engine: the echo image built from emulator/echo.Dockerfile, run the
way SageMaker runs a container; ownership labels, exits seen from Docker's events, leftovers of a
crashed emulator removed and nothing else; `python -m emulator up --runtime docker` as a user runs it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from emulator.controller.runtimes import RuntimeUnavailable
from emulator.controller.runtimes.docker import OWNER_HOME, OWNER_INSTANCE, OWNER_PID, DockerRuntime
from emulator.server import Emulator, emulator_in_thread, run_emulator
from tests.emulator.support import (
    bidi_client,
    boto_client,
    endpoint,
    fast_config,
    manifest,
    model,
    next_part,
    open_stream,
    part,
    replicas,
    status,
    variant,
)
from tests.emulator.test_main import run
from tests.support.docker import ECHO_IMAGE, built, docker_client


def owned(home: Path) -> list:
    return docker_client().containers.list(all=True, filters={"label": f"{OWNER_HOME}={home.resolve()}"})


async def test_without_an_engine_the_runtime_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(RuntimeUnavailable, match="no Docker engine"):
        await DockerRuntime().check()
    with pytest.raises(RuntimeUnavailable, match="no Docker engine"):
        async with run_emulator(fast_config(tmp_path, runtime="docker")):
            pass


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    built(ECHO_IMAGE)
    resources = [model("echo", ECHO_IMAGE), *endpoint("echo", [variant("AllTraffic", "echo")])]
    config = fast_config(tmp_path_factory.mktemp("emulator"), runtime="docker", startup_timeout_s=120)
    with emulator_in_thread(config, manifest(resources)) as running:
        yield running


@pytest.mark.docker
def test_docker_replica_serves_both_runtimes_and_is_removed(emu: Emulator) -> None:
    runtime = boto_client(emu, "sagemaker-runtime")
    assert (
        runtime.invoke_endpoint(EndpointName="echo", Body=b"in a container")["Body"].read()
        == b"in a container"
    )

    async def bidirectional() -> bytes:
        client = await bidi_client(emu)
        stream = await open_stream(client, "echo")
        await stream.input_stream.send(part(b"frame", "UTF8"))
        _, events = await stream.await_output()
        answer = await next_part(events)
        await stream.close()
        return answer.bytes_

    assert asyncio.run(bidirectional()) == b"frame"
    [container] = owned(emu.config.home_dir)
    assert container.status == "running" and container.image.tags == [ECHO_IMAGE]
    assert container.labels[OWNER_INSTANCE] and container.labels[OWNER_PID].isdigit()
    [replica] = replicas(emu, "echo")
    assert replica["ident"] == f"container {container.short_id}"
    assert Path(replica["log"]).read_text().strip(), "the container's output reaches the replica log"

    container.kill()
    started = time.monotonic()
    while not any(e["reason"] == "ReplicaExited" for e in status(emu)["events"]):
        assert time.monotonic() - started < 3, "the exit comes from Docker's events, not a 5 s poll"
        time.sleep(0.05)
    sagemaker = boto_client(emu, "sagemaker")
    sagemaker.get_waiter("endpoint_in_service").wait(EndpointName="echo", WaiterConfig={"Delay": 0.2})
    deadline = time.monotonic() + 60
    while not (replicas(emu, "echo") and replicas(emu, "echo")[0]["ready"]):
        assert time.monotonic() < deadline, "the killed replica was not replaced"
        time.sleep(0.2)
    assert runtime.invoke_endpoint(EndpointName="echo", Body=b"again")["Body"].read() == b"again"

    sagemaker.delete_endpoint(EndpointName="echo")
    sagemaker.get_waiter("endpoint_deleted").wait(
        EndpointName="echo", WaiterConfig={"Delay": 0.2, "MaxAttempts": 300}
    )
    assert owned(emu.config.home_dir) == []


@pytest.mark.docker
def test_start_removes_what_a_dead_emulator_of_this_home_left_and_nothing_else(tmp_path: Path) -> None:
    client = docker_client()
    image = built(ECHO_IMAGE)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    home, other_home = (tmp_path / "home").resolve(), (tmp_path / "other").resolve()
    live_pid = str(os.getppid())  # a live process other than this one
    specs = {
        "leftover": {OWNER_HOME: str(home), OWNER_INSTANCE: "crashed", OWNER_PID: dead.stdout.strip()},
        "running-emulator": {OWNER_HOME: str(home), OWNER_INSTANCE: "alive", OWNER_PID: live_pid},
        "other-home": {
            OWNER_HOME: str(other_home),
            OWNER_INSTANCE: "crashed",
            OWNER_PID: dead.stdout.strip(),
        },
        "unlabelled": {},
    }
    suffix = uuid.uuid4().hex[:8]
    created = {
        name: client.containers.create(image, name=f"{name}-{suffix}", labels=labels)
        for name, labels in specs.items()
    }
    try:
        runtime = DockerRuntime(home=home)
        asyncio.run(runtime.check())
        left = {c.name for c in client.containers.list(all=True, filters={"name": suffix})}
        assert left == {f"{name}-{suffix}" for name in ("running-emulator", "other-home", "unlabelled")}
    finally:
        for container in created.values():
            with contextlib.suppress(Exception):
                container.remove(force=True)


@pytest.mark.docker
@pytest.mark.integration
@pytest.mark.timeout(600)
def test_up_builds_the_missing_image_serves_and_down_leaves_no_container(tmp_path: Path) -> None:
    tag = f"voice-agent-aws/echo:test-{uuid.uuid4().hex[:8]}"
    built(ECHO_IMAGE)  # the layers are cached: this build only tags them
    manifest_path = tmp_path / "echo.yaml"
    manifest_path.write_text(
        yaml.safe_dump(
            {"resources": [model("echo", tag), *endpoint("echo", [variant("AllTraffic", "echo")])]}
        )
    )
    ports = ("--http-port", "0", "--h2-port", "0")
    refused = run(
        tmp_path, "up", "--runtime", "docker", "--no-build", "--detach", "-f", str(manifest_path), *ports
    )
    assert refused.returncode == 1
    assert f"{tag} not present and building is off (--no-build)" in refused.stderr
    try:
        up = run(
            tmp_path, "up", "--runtime", "docker", "--detach", "-f", str(manifest_path), *ports, timeout=540
        )
        assert up.returncode == 0, up.stderr
        assert "Step 1/" in up.stderr and f"built {tag}" in up.stderr, "build progress on the terminal"
        state = json.loads(run(tmp_path, "status", "--json").stdout)
        [replica] = state["endpoints"][0]["replicas"]
        [container] = owned(tmp_path)
        assert replica["ident"] == f"container {container.short_id}" and replica["ready"]
        table = run(tmp_path, "status").stdout
        assert f"container {container.short_id}" in table
        logs = run(tmp_path, "logs", replica["id"])
        assert logs.returncode == 0 and f"==> {replica['id']}" in logs.stdout

        container.kill()
        deadline = time.monotonic() + 60
        while True:
            current = json.loads(run(tmp_path, "status", "--json").stdout)["endpoints"][0]["replicas"][0]
            if current["restarts"] == 1 and current["ready"]:
                break
            assert time.monotonic() < deadline, "the killed replica did not come back"
            time.sleep(0.3)
    finally:
        down = run(tmp_path, "down")
        docker_client().images.remove(tag)
    assert down.returncode == 0 and "stopped" in down.stderr
    assert owned(tmp_path) == []
