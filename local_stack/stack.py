"""`local_stack()`: the emulator in a thread of this process with the default manifest (the Kokoro
endpoint, Bedrock, the agent as AgentCore runtime `voice_agent`), OpenAI's audio routes in front of it
(`python -m gateway` as a child, pointed at the emulator by the variables `python -m emulator env` prints,
exactly as a user runs it in front of AWS), and `LocalStack`, what it yields.

The stack is what the manifest says, and the manifest is written from the product's definition
(deploy/product.py, `python -m deploy manifests`): the voice, the instance type and the names here are
the deployed stacks' (`stack_manifest` is what a stack applies).

Nothing here changes this process's environment: `LocalStack.env` holds the variables that point
unmodified AWS clients (boto3, the AWS CLI) at the emulator, for the caller to pass on; settings meant
for a replica go into the manifest (`agent_env`, `tts_env`), which hands them to that replica alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from emulator.config import EmulatorConfig
from emulator.manifest import DEFAULT_MANIFEST, Manifest, Resource, load_manifest
from emulator.processes import child, free_port
from emulator.server import emulator_in_thread
from facts import AGENT_RUNTIME, TTS_ENDPOINT

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LocalStack:
    runtime_arn: str
    """The agent through the emulated AgentCore Runtime (the deployed path)."""
    agent_url: str
    """The same agent's replica reached directly (its web page, its plain HTTP API)."""
    env: dict[str, str]
    """What points unmodified AWS clients at this stack (`python -m emulator env`): endpoints, CA,
    region, credentials. Pass it to a child process's environment."""
    openai_url: str
    """OpenAI's audio routes over the Kokoro endpoint (`OPENAI_BASE_URL`): the gateway's `/v1`."""


def with_environment(
    manifest: Manifest, agent_env: Mapping[str, str], tts_env: Mapping[str, str]
) -> Manifest:
    """The manifest with `agent_env` added to every agent runtime's environment variables and
    `tts_env` to every model's container environment (the TTS replicas')."""

    def changed(resource: Resource) -> Resource:
        spec = resource.spec
        if resource.kind == "AgentRuntime" and agent_env:
            spec = {**spec, "environmentVariables": {**spec.get("environmentVariables", {}), **agent_env}}
        elif resource.kind == "Model" and tts_env:
            container = spec.get("PrimaryContainer", {})
            container = {**container, "Environment": {**container.get("Environment", {}), **tts_env}}
            spec = {**spec, "PrimaryContainer": container}
        return Resource(resource.kind, spec)

    return dataclasses.replace(manifest, resources=tuple(changed(r) for r in manifest.resources))


def stack_manifest(
    manifest: Path = DEFAULT_MANIFEST,
    agent_env: Mapping[str, str] | None = None,
    tts_env: Mapping[str, str] | None = None,
) -> Manifest:
    """What `local_stack` applies: the manifest with the replicas' settings added (`with_environment`)."""
    return with_environment(load_manifest(manifest), agent_env or {}, tts_env or {})


@contextlib.contextmanager
def local_stack(
    emulator: EmulatorConfig | None = None,
    manifest: Path = DEFAULT_MANIFEST,
    agent_env: Mapping[str, str] | None = None,
    tts_env: Mapping[str, str] | None = None,
) -> Iterator[LocalStack]:
    """The emulator in a thread of this process, running the agent as its AgentCore runtime
    `voice_agent` (a replica pointed at the emulator by the variables `python -m emulator env`
    prints, plus `agent_env`) beside the TTS endpoint (its replicas get `tts_env` too)."""
    config = emulator or dataclasses.replace(EmulatorConfig.from_env(), http_port=0, h2_port=0)
    with (
        emulator_in_thread(config, stack_manifest(manifest, agent_env, tts_env)) as emu,
        openai_gateway(emu.env, config.home_dir) as openai_url,
    ):
        runtime = next(rt for rt in emu.store.agent_runtimes.values() if rt.name == AGENT_RUNTIME)
        assert runtime.current is not None and runtime.current.address is not None
        host, port = runtime.current.address
        yield LocalStack(
            runtime_arn=runtime.arn, agent_url=f"http://{host}:{port}", env=emu.env, openai_url=openai_url
        )


@contextlib.contextmanager
def openai_gateway(env: Mapping[str, str], home: Path) -> Iterator[str]:
    """`python -m gateway` over the Kokoro endpoint on a free port, its AWS clients pointed at the stack
    by `env` alone (its log: `<home>/gateway.log`); yields its `/v1` URL once it answers."""
    port = free_port()
    argv = [sys.executable, "-m", "gateway", "--endpoint-name", TTS_ENDPOINT, "--port", str(port)]
    home.mkdir(parents=True, exist_ok=True)
    with (home / "gateway.log").open("ab") as log:
        ready = f"http://127.0.0.1:{port}/v1/models"
        with child(argv, env=env, ready_url=ready, cwd=REPO, stdout=log, stderr=subprocess.STDOUT):
            yield f"http://127.0.0.1:{port}/v1"
