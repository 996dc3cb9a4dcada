"""`agent-infra deploy|destroy|status|demo`: the voice agent on AgentCore, speaking through the endpoint."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from deploy import cli
from deploy.parts import agent_part, speech_part


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="agent-infra", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    deploy = commands.add_parser("deploy", help="deploy the runtime role and the runtime; wait for READY")
    destroy = commands.add_parser(
        "destroy", help="delete the agent stacks (ECR images and logs are retained)"
    )
    status = commands.add_parser("status", help="READY, or why not, and the endpoint it speaks through")
    commands.add_parser("demo", help="talk to the deployed agent (agent.demo; `agent-infra demo --help`)")
    cli.add_agent(deploy, required=True)
    cli.add_source(deploy)
    cli.add_wait(deploy)
    # Accepted for symmetry with deploy: the stacks are found by name, so the model does not matter here.
    destroy.add_argument("--bedrock-model-id", help="the model the agent was deployed with (optional)")
    cli.add_wait(destroy)
    status.add_argument(
        "--tts-endpoint", help="SageMaker endpoint the agent speaks through (default kokoro-82m)"
    )
    for command in (deploy, destroy, status):
        cli.add_common(command)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:
        from agent.demo import main as demo_main

        return demo_main(argv[1:])
    args = parser().parse_args(argv)

    def command() -> int:
        config = cli.config_from(args)
        parts = [agent_part(config)]
        status_parts = [agent_part(config), speech_part(config)]
        return cli.act(args.command, config, parts, getattr(args, "no_wait", False), status_parts)

    return cli.run(command)


if __name__ == "__main__":
    raise SystemExit(main())
