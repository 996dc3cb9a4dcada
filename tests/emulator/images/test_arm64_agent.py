"""The agent as AgentCore runs it: the linux/arm64 image, built here from agent/Dockerfile under QEMU and
answering one turn through the emulated AgentCore (its Kokoro endpoint the amd64 tts image), so that a
dependency without an aarch64 wheel, a base without an arm64 variant or a compiled dependency fails CI
rather than a customer's `cdk deploy`. The `arm64_image` phase of .ci/run (`tox -e arm64-image`); its
cost is in README.md. The deploy rehearsal's own arm64 path is tests/deploy/test_rehearsal.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulator.controller.runtimes.docker import OWNER_HOME
from emulator.images.platforms import cannot_run
from emulator.manifest import DEFAULT_MANIFEST, Resource, load_manifest
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import boto_client, fast_config
from tests.support.docker import TTS_IMAGE, built, docker_client
from tts.wire.sse import SSEParser

pytestmark = [pytest.mark.docker, pytest.mark.integration, pytest.mark.arm64_image, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[3]
IMAGE = "voice-agent-aws/agent:arm64"
# What AWS's build runs on (python:3.12-slim's arm64 variant) and the CPython wheels' platform tags.
AWS_PYTHON = "3.12"
AARCH64 = ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64")


def test_every_agent_dependency_has_an_aarch64_wheel_for_the_python_aws_builds_with(tmp_path: Path):
    """The base here is Python 3.13 (emulator/images/arm64_base.py says why); AWS's build is 3.12. pip
    resolves the agent's dependencies for cp312 aarch64, wheels only, without installing anything."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    platforms = [arg for tag in AARCH64 for arg in ("--platform", tag)]
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"),
            *("--report", str(tmp_path / "report.json"), "--target", str(tmp_path / "target")),
            *platforms,
            *("--python-version", AWS_PYTHON, "--only-binary=:all:", *extras["agent"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"an agent dependency has no cp312 aarch64 wheel:\n{result.stderr[-3000:]}"
    installed = json.loads((tmp_path / "report.json").read_text())["install"]
    compiled = [i["download_info"]["url"].rsplit("/", 1)[1] for i in installed]
    compiled = [name for name in compiled if not name.endswith("-none-any.whl")]
    print(f"{len(installed)} packages, {len(compiled)} compiled for aarch64: {compiled}", file=sys.stderr)
    assert compiled and all("aarch64" in name for name in compiled)


@pytest.fixture(scope="module")
def arm64_agent() -> str:
    """`python -m emulator build --platform linux/arm64`, as README.md shows it; its time on stderr."""
    why_not = cannot_run(docker_client(), "linux/arm64")
    assert why_not is None, f"{why_not} (scripts/docker-engine start sets it up as root)"
    started = time.monotonic()
    subprocess.run(
        [
            *(sys.executable, "-m", "emulator", "build", "--dockerfile", "agent/Dockerfile"),
            *("--tag", IMAGE, "--platform", "linux/arm64"),
        ],
        cwd=REPO,
        check=True,
        timeout=3000,
    )
    print(f"{IMAGE}: built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return IMAGE


def test_the_image_is_arm64_and_the_agent_imports_under_emulation(arm64_agent: str):
    attrs = docker_client().api.inspect_image(arm64_agent)
    assert (attrs["Os"], attrs["Architecture"]) == ("linux", "arm64")
    started = time.monotonic()
    probe = "import platform, agent.app; print(platform.machine())"
    shown = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--platform",
            "linux/arm64",
            "--entrypoint",
            "python",
            arm64_agent,
            "-c",
            probe,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    print(f"import agent.app under emulation: {time.monotonic() - started:.1f} s", file=sys.stderr)
    assert shown.stdout.strip() == "aarch64"


@pytest.fixture(scope="module")
def emu(arm64_agent: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """The default manifest (the Kokoro endpoint, the voice agent runtime) with the runtime's image the
    arm64 agent; the reply model is the paced script (the LLM is not what is tested here)."""
    manifest = load_manifest(DEFAULT_MANIFEST)
    built(TTS_IMAGE)
    resources = []
    for resource in manifest.resources:
        if resource.kind == "AgentRuntime":
            artifact = {"containerConfiguration": {"containerUri": arm64_agent}}
            resource = Resource(resource.kind, {**resource.spec, "agentRuntimeArtifact": artifact})
        resources.append(resource)
    home = tmp_path_factory.mktemp("emulator")
    # The agent starts under emulation: its imports take tens of seconds on 2 shared cores.
    config = fast_config(home, runtime="docker", startup_timeout_s=600)
    with emulator_in_thread(config, type(manifest)(tuple(resources), manifest.images)) as running:
        yield running
    left = docker_client().containers.list(all=True, filters={"label": f"{OWNER_HOME}={home.resolve()}"})
    assert left == [], "the emulator left a container behind"


def test_the_arm64_agent_answers_a_spoken_turn_through_agentcore(emu: Emulator):
    control = boto_client(emu, "bedrock-agentcore-control")
    (runtime,) = control.list_agent_runtimes()["agentRuntimes"]
    described = control.get_agent_runtime(agentRuntimeId=runtime["agentRuntimeId"])
    assert described["status"] == "READY"
    assert described["cpuConfigurations"] == [{"architecture": "ARM64"}]
    started = time.monotonic()
    response = boto_client(emu, "bedrock-agentcore").invoke_agent_runtime(
        agentRuntimeArn=runtime["agentRuntimeArn"],
        runtimeSessionId="arm64-turn-" + "0" * 30,
        payload=json.dumps({"prompt": "Where is my order?", "mode": "bidi"}).encode(),
    )
    parser, events, first_audio = SSEParser(), [], None
    for raw in response["response"].iter_chunks():
        events += parser.feed(raw)
        if first_audio is None and any(e["type"] == "audio_chunk" for e in events):
            first_audio = time.monotonic() - started
    kinds = [e["type"] for e in events]
    print(
        f"first turn through the arm64 agent: first audio {first_audio:.1f} s, "
        f"done {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end" and "error" not in kinds
    assert events[-1]["ok"] is True and events[-1]["audio_s"] > 1.0
