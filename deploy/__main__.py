"""`python -m deploy aws|synth|destroy|status`: the whole system at once (speech endpoint, then agent)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from deploy.commands import act, flags, run, toolkit
from deploy.parts import all_parts


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m deploy", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    aws = commands.add_parser(
        "aws", help="check prerequisites, deploy the speech stacks then the agent stacks"
    )
    synth = commands.add_parser("synth", help="synthesize every stack offline into cdk.out")
    destroy = commands.add_parser("destroy", help="delete the agent stacks, then the speech stacks")
    status = commands.add_parser("status", help="the endpoint and the runtime: ready, or why not")
    for command in (aws, synth):
        flags.add_speech(command, image_flag="--tts-image-uri")
        flags.add_agent(command, image_flag="--agent-image-uri")
        flags.add_source(command)
    flags.add_wait(aws)
    flags.add_wait(destroy)
    status.add_argument("--tts-endpoint", help="SageMaker endpoint name (default kokoro-82m)")
    for command in (aws, synth, destroy, status):
        flags.add_common(command)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def command() -> int:
        config = flags.config_from(args)
        parts = all_parts(config)
        if args.command == "synth":
            # Read before synthesis, so that an image and AMI that cannot run together fail at once.
            summary = [line for part in parts for line in part.summary()]
            assembly = toolkit(config).synth(parts)
            print(
                f"synthesized {', '.join(stack for part in parts for stack in part.stacks)} into {assembly}"
            )
            print("\n".join(summary))
            return 0
        return act(args.command, config, parts, getattr(args, "no_wait", False))

    return run(command)


if __name__ == "__main__":
    raise SystemExit(main())
