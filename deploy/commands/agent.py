"""`agent-infra deploy|destroy|status|demo`: the voice agent on AgentCore, speaking through the endpoint
(and with `--listen` listening through the speech-to-text endpoint)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence

from deploy.commands import act, flags, run
from deploy.parts.agent import AgentPart
from deploy.parts.listening import ListeningPart
from deploy.parts.speech import SpeechPart

# `demo` is the agent's own program, run as one: deploy reads `agent.config` and imports no more of the
# agent, so the demo's flags and output stay the agent's (see `agent-infra demo --help`).
DEMO_COMMAND = (sys.executable, "-m", "tools.demo")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="agent-infra", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    deploy = commands.add_parser("deploy", help="deploy the runtime role and the runtime; wait for READY")
    destroy = commands.add_parser(
        "destroy", help="delete the agent stacks (ECR images and logs are retained)"
    )
    status = commands.add_parser("status", help="READY, or why not, and the endpoint it speaks through")
    commands.add_parser("demo", help="talk to the deployed agent (tools.demo; `agent-infra demo --help`)")
    flags.add_agent(deploy, required=True)
    flags.add_listen(deploy)
    flags.add_source(deploy)
    flags.add_wait(deploy)
    flags.add_rehearsal(deploy)
    # Accepted for symmetry with deploy: the stacks are found by name, so the model does not matter here.
    destroy.add_argument("--bedrock-model-id", help="the model the agent was deployed with (optional)")
    flags.add_wait(destroy)
    status.add_argument(
        "--tts-endpoint", help="SageMaker endpoint the agent speaks through (default kokoro-82m)"
    )
    flags.add_listen(status)
    for command in (deploy, destroy, status):
        flags.add_common(command)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:
        return subprocess.run([*DEMO_COMMAND, *argv[1:]], check=False).returncode
    args = parser().parse_args(argv)

    def command() -> int:
        config = flags.config_from(args)
        parts = [AgentPart(config)]
        status_parts = [AgentPart(config), SpeechPart(config)]
        if config.listen:
            status_parts.append(ListeningPart(config))
        return act(args.command, config, parts, getattr(args, "no_wait", False), status_parts)

    return run(command)


if __name__ == "__main__":
    raise SystemExit(main())
