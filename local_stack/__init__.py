"""The whole stack on this machine: the emulator (SageMaker with the real Kokoro container, Bedrock,
and Bedrock AgentCore running the agent as the runtime `voice_agent`), started together and stopped
together.

`python -m local_stack` asks one question through the AgentCore hop (`invoke_agent_runtime` on the
runtime's ARN, as `agent-infra demo --endpoint-url <ARN>` does against AWS), saves the spoken answer
to `out/answer.wav` and prints the time to first audio of both modes (medians of three runs each);
`--serve` keeps the stack up for the web page until Ctrl-C or SIGTERM, either of which stops the
agent and the emulator's replicas. The benchmarks and the integration tests use `local_stack()` the
same way.
It prints only the question, the answer, the file written, the comparison and the web address: the
servers' logs go to `out/local-stack.log` (named in one line), or to the terminal with `--verbose`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import uuid
import wave
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.demo import DEFAULT_PROMPT, compare, report, turn_chunks
from agent.events import SAMPLE_RATE, read_events
from emulator.config import EmulatorConfig
from emulator.manifest import DEFAULT_MANIFEST, Manifest, Resource, load_manifest
from emulator.server import emulator_in_thread

RUNTIME_NAME = "voice_agent"


@dataclass(frozen=True)
class LocalStack:
    runtime_arn: str
    """The agent through the emulated AgentCore Runtime (the deployed path)."""
    agent_url: str
    """The same agent's replica reached directly (its web page, its plain HTTP API)."""
    env: dict[str, str]


def with_agent_env(manifest: Manifest, agent_env: Mapping[str, str]) -> Manifest:
    """The manifest with `agent_env` added to every agent runtime's environment variables."""
    resources = tuple(
        Resource(
            r.kind,
            {**r.spec, "environmentVariables": {**r.spec.get("environmentVariables", {}), **agent_env}},
        )
        if r.kind == "AgentRuntime"
        else r
        for r in manifest.resources
    )
    return dataclasses.replace(manifest, resources=resources)


@contextlib.contextmanager
def exported(env: Mapping[str, str]) -> Iterator[None]:
    """`env` in this process's environment for the block (what `eval "$(python -m emulator env)"`
    does for a shell), so boto3 clients created here reach the emulator."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def local_stack(
    emulator: EmulatorConfig | None = None,
    manifest: Path = DEFAULT_MANIFEST,
    agent_env: dict[str, str] | None = None,
) -> Iterator[LocalStack]:
    """The emulator in a thread of this process, running the agent as its AgentCore runtime
    `voice_agent` (a replica pointed at the emulator by the variables `python -m emulator env`
    prints); this process's environment points boto3 at the emulator for the block."""
    config = emulator or dataclasses.replace(EmulatorConfig.from_env(), http_port=0, h2_port=0)
    with emulator_in_thread(config, with_agent_env(load_manifest(manifest), agent_env or {})) as emu:
        runtime = next(rt for rt in emu.store.agent_runtimes.values() if rt.name == RUNTIME_NAME)
        assert runtime.current is not None and runtime.current.address is not None
        host, port = runtime.current.address
        with exported(emu.env):
            yield LocalStack(runtime_arn=runtime.arn, agent_url=f"http://{host}:{port}", env=emu.env)


def speak_to_wav(target: str, prompt: str, out: Path, mode: str = "bidi") -> tuple[str, float]:
    """One turn of the agent at `target` (URL or runtime ARN); the PCM audio is written to `out` as
    WAV. Returns the answer and its audio seconds."""
    text, pcm = "", bytearray()
    payload = {"prompt": prompt, "mode": mode, "format": "pcm"}
    for _, event in read_events(turn_chunks(target, payload, f"local-{uuid.uuid4()}")):
        if event["type"] == "text_delta":
            text += event["text"]
        elif event["type"] == "audio_chunk":
            pcm += base64.b64decode(event["data"])
        elif event["type"] == "error":
            raise RuntimeError(f"{event['code']}: {event['message']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(out), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(bytes(pcm))
    return text, len(pcm) / 2 / SAMPLE_RATE


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so every `with` block stops what it started."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_stack", description=__doc__)
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--out", type=Path, default=Path("out/answer.wav"))
    parser.add_argument("--serve", action="store_true", help="keep the stack running until Ctrl-C")
    parser.add_argument("--log", type=Path, default=Path("out/local-stack.log"), help="the servers' logs")
    parser.add_argument("--verbose", action="store_true", help="the servers' logs on the terminal instead")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_bytes(b"")
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            handlers=[logging.FileHandler(args.log)],
        )
        print(f"server logs: {args.log} (the replicas' own logs are under the emulator's home)", flush=True)
    logging.captureWarnings(True)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe otherwise
    try:
        with local_stack() as stack:
            text, seconds = speak_to_wav(stack.runtime_arn, args.prompt, args.out)
            print(f"\nQ: {args.prompt}\nA: {text}\nwrote {args.out} ({seconds:.1f} s of speech)\n")
            print(report(compare(stack.runtime_arn, args.prompt)))
            if args.serve:
                print(f"\nweb page: {stack.agent_url}/   (Ctrl-C stops everything)", flush=True)
                signal.pause()
    except KeyboardInterrupt:
        print("stopped: the agent and the emulator's replicas are down", file=sys.stderr, flush=True)
        return 130
    return 0
