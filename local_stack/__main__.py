"""`python -m local_stack [--prompt P] [--out WAV] [--runs N] [--serve [--port N]] [--log FILE | --verbose]`
(what `scripts/demo` runs): the whole stack on this machine (`local_stack.stack`), one question through
the AgentCore hop (`invoke_agent_runtime` on the runtime's ARN, as `agent-infra demo --endpoint-url <ARN>`
does against AWS) with the spoken answer saved to `out/answer.wav`, and the time to first audio of
both modes (medians of `--runs` runs each, three by default; `local_stack.ask`, in a child whose
environment is the stack's).

`--serve` keeps the stack up for the web page until Ctrl-C or SIGTERM, either of which stops the agent
and the emulator's replicas; it starts the speech-to-text endpoint too (compose/voice.yaml), for the
page's microphone; the page is at the agent replica's own address, or on 127.0.0.1:N with
`--port N`, and any OpenAI speech client is served at the stack's gateway (`OPENAI_BASE_URL`, printed).
It prints only the question, the answer, the file written, the comparison and the web and OpenAI
addresses: the servers' logs go to `out/local-stack.log` (named in one line; the gateway's under the
emulator's home), or to the terminal with `--verbose`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from emulator.manifest import DEFAULT_MANIFEST, VOICE_MANIFEST
from local_stack.stack import local_stack
from local_stack.web import RelayError, relay
from tools.demo import DEFAULT_PROMPT, DEFAULT_RUNS, runs_per_mode


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so every `with` block stops what it started."""
    raise KeyboardInterrupt


def _log_to(log: Path | None) -> None:
    """The servers' logs to `log`, or to the terminal when `log` is None."""
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
        handlers = [logging.FileHandler(log)]
        print(f"server logs: {log} (the replicas' own logs are under the emulator's home)", flush=True)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers
    )
    logging.captureWarnings(True)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe otherwise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local_stack", description=__doc__)
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--out", type=Path, default=Path("out/answer.wav"))
    parser.add_argument(
        "--runs", type=runs_per_mode, default=DEFAULT_RUNS, help="of each mode, for the comparison"
    )
    parser.add_argument("--serve", action="store_true", help="keep the stack running until Ctrl-C")
    parser.add_argument(
        "--port",
        type=int,
        help="with --serve: the web page on 127.0.0.1:PORT (default: the agent's own port)",
    )
    parser.add_argument("--log", type=Path, default=Path("out/local-stack.log"), help="the servers' logs")
    parser.add_argument("--verbose", action="store_true", help="the servers' logs on the terminal instead")
    args = parser.parse_args(argv)
    if args.port is not None and not args.serve:
        parser.error("--port is the web page's port: it needs --serve")
    if args.port is not None and not 0 < args.port < 65536:
        parser.error(f"--port must be 1-65535, got {args.port}")
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    _log_to(None if args.verbose else args.log)
    try:
        with local_stack(manifest=VOICE_MANIFEST if args.serve else DEFAULT_MANIFEST) as stack:
            ask = [
                sys.executable,
                "-m",
                "local_stack.ask",
                stack.runtime_arn,
                f"--prompt={args.prompt}",
                f"--runs={args.runs}",
            ]
            asked = subprocess.run([*ask, f"--out={args.out}"], env={**os.environ, **stack.env}, check=False)
            if asked.returncode != 0:
                return asked.returncode
            if args.serve:
                with contextlib.ExitStack() as page:
                    url = stack.agent_url
                    if args.port is not None:
                        agent = urlsplit(stack.agent_url)
                        url = page.enter_context(relay(args.port, (agent.hostname, agent.port)))
                    print(f"\nweb page: {url}/   (Ctrl-C stops everything)", flush=True)
                    print(
                        f"OpenAI speech: OPENAI_BASE_URL={stack.openai_url} OPENAI_API_KEY=unused", flush=True
                    )
                    signal.pause()
    except RelayError as exc:
        print(f"local_stack: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped: the agent and the emulator's replicas are down", file=sys.stderr, flush=True)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
