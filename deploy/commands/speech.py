"""`speech-infra deploy|destroy|status MODEL`: the speech endpoint alone (model cache, role, endpoint)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from deploy.commands import act, flags, run
from deploy.config import SPEECH_MODELS
from deploy.parts.speech import SpeechPart


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="speech-infra", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    deploy = commands.add_parser(
        "deploy", help="deploy the model cache, the role and the endpoint; wait for InService"
    )
    destroy = commands.add_parser(
        "destroy", help="delete the stacks (the S3 cache and ECR images are retained)"
    )
    status = commands.add_parser("status", help="InService, or why not (exit 0 only when InService)")
    for command in (deploy, destroy, status):
        command.add_argument("model", choices=sorted(SPEECH_MODELS), help="speech model")
        flags.add_common(command)
    flags.add_speech(deploy)
    flags.add_source(deploy)
    flags.add_wait(deploy)
    flags.add_wait(destroy)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def command() -> int:
        config = flags.config_from(args, model=args.model)
        return act(args.command, config, [SpeechPart(config)], getattr(args, "no_wait", False))

    return run(command)


if __name__ == "__main__":
    raise SystemExit(main())
