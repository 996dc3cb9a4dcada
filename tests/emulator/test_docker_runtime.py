"""The `docker` runtime: `docker run IMAGE serve`, the image's bidi label, a port mapping.

Without a Docker engine the runtime must say so plainly; the end-to-end test then skips with that
reason.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.runtimes import RuntimeUnavailable
from emulator.runtimes.docker import DockerRuntime
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
    variant,
)
from tests.support.docker import docker_unavailable

REPO = Path(__file__).resolve().parents[2]
IMAGE = "voice-agent-aws/echo-test:latest"


@pytest.mark.skipif(docker_unavailable() is None, reason="a Docker engine is present")
async def test_without_an_engine_the_runtime_says_so(tmp_path: Path) -> None:
    with pytest.raises(RuntimeUnavailable, match="no Docker engine"):
        await DockerRuntime().check()
    with pytest.raises(RuntimeUnavailable, match="no Docker engine"):
        async with run_emulator(fast_config(tmp_path, runtime="docker")):
            pass


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    reason = docker_unavailable()
    if reason is not None:
        pytest.skip(reason)
    subprocess.run(
        ["docker", "build", "-f", "tests/fixtures/echo.Dockerfile", "-t", IMAGE, "."], cwd=REPO, check=True
    )
    resources = [model("echo", IMAGE), *endpoint("echo", [variant("AllTraffic", "echo")])]
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
    containers = subprocess.run(
        ["docker", "ps", "-q", "--filter", "name=echo-alltraffic"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert containers
    sagemaker = boto_client(emu, "sagemaker")
    sagemaker.delete_endpoint(EndpointName="echo")
    sagemaker.get_waiter("endpoint_deleted").wait(
        EndpointName="echo", WaiterConfig={"Delay": 0.2, "MaxAttempts": 300}
    )
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "name=echo-alltraffic"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not left
