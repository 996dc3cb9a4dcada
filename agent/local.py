"""The whole stack on this machine: the emulator (SageMaker with the real Kokoro container, and Bedrock)
plus the agent, started together and stopped together.

`python -m agent.local` asks one question, saves the spoken answer to `out/answer.wav` and prints the
time to first audio of both modes; `--serve` keeps the stack up for the web page until Ctrl-C.
It prints only the question, the answer, the file written, the comparison and the web address: the
servers' logs go to `out/local-stack.log` (named in one line), or to the terminal with `--verbose`.
The bench and the integration tests use `local_stack()` the same way.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import logging
import signal
import subprocess
import sys
import uuid
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agent.demo import DEFAULT_PROMPT, compare, local_chunks, report
from emulator.config import EmulatorConfig
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.processes import child, free_port
from emulator.server import emulator_in_thread
from tts.sse import SSEParser


@dataclass(frozen=True)
class LocalStack:
    agent_url: str
    env: dict[str, str]


@contextlib.contextmanager
def local_stack(
    emulator: EmulatorConfig | None = None,
    agent_port: int | None = None,
    manifest: Path = DEFAULT_MANIFEST,
    agent_env: dict[str, str] | None = None,
    agent_log: IO[bytes] | None = None,
) -> Iterator[LocalStack]:
    """Emulator in a thread of this process, the agent as a child process pointed at it by the
    variables `python -m emulator env` prints, and nothing else. `agent_log` takes the agent's
    output (default: this process's stdout and stderr)."""
    config = emulator or dataclasses.replace(EmulatorConfig.from_env(), http_port=0, h2_port=0)
    port = agent_port or free_port()
    with emulator_in_thread(config, load_manifest(manifest)) as emu:
        env = {**emu.env, **(agent_env or {}), "AGENT_PORT": str(port)}
        streams = {"stdout": agent_log, "stderr": subprocess.STDOUT} if agent_log else {}
        with child(
            [sys.executable, "-m", "agent", "serve"],
            env=env,
            ready_url=f"http://127.0.0.1:{port}/ping",
            **streams,
        ):
            yield LocalStack(agent_url=f"http://127.0.0.1:{port}", env=emu.env)


def speak_to_wav(agent_url: str, prompt: str, out: Path, mode: str = "bidi") -> tuple[str, float]:
    """One turn; the PCM audio is written to `out` as WAV. Returns the answer and its audio seconds."""
    parser, text, pcm = SSEParser(), "", bytearray()
    payload = {"prompt": prompt, "mode": mode, "format": "pcm"}
    for raw in local_chunks(agent_url, payload, f"local-{uuid.uuid4()}"):
        for event in parser.feed(raw):
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
        wav.setframerate(24_000)
        wav.writeframes(bytes(pcm))
    return text, len(pcm) / 48_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.local", description=__doc__)
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--out", type=Path, default=Path("out/answer.wav"))
    parser.add_argument("--port", type=int, default=8080, help="the agent's port (the web page is at /)")
    parser.add_argument("--serve", action="store_true", help="keep the stack running until Ctrl-C")
    parser.add_argument("--log", type=Path, default=Path("out/local-stack.log"), help="the servers' logs")
    parser.add_argument("--verbose", action="store_true", help="the servers' logs on the terminal instead")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack_scope:
        if args.verbose:
            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            agent_log = None
        else:
            args.log.parent.mkdir(parents=True, exist_ok=True)
            args.log.write_bytes(b"")
            agent_log = stack_scope.enter_context(args.log.open("ab"))  # appends, like the handler below
            logging.basicConfig(
                level=logging.INFO,
                format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                handlers=[logging.FileHandler(args.log)],
            )
            print(f"server logs: {args.log}", flush=True)
        logging.captureWarnings(True)
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe otherwise
        stack = stack_scope.enter_context(local_stack(agent_port=args.port, agent_log=agent_log))
        text, seconds = speak_to_wav(stack.agent_url, args.prompt, args.out)
        print(f"\nQ: {args.prompt}\nA: {text}\nwrote {args.out} ({seconds:.1f} s of speech)\n")
        print(report(compare(stack.agent_url, args.prompt, runs=1)))
        if args.serve:
            print(f"\nweb page: {stack.agent_url}/   (Ctrl-C stops everything)", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
