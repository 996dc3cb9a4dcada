"""`speech-infra deploy|destroy|status MODEL`: one speech endpoint alone: `kokoro-82m` (model cache, role,
endpoint, dashboard and alarms) or `whisper-stt`, the speech-to-text endpoint (role, endpoint). Each
model's deploy takes its own flags (Kokoro's `--instance-type` ..., Whisper's `--stt-instance-type`
...) and refuses the other's."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from deploy.commands import act, flags, run
from deploy.config import SPEECH_MODELS
from deploy.errors import ConfigError
from deploy.part import Part
from deploy.parts.listening import ListeningPart
from deploy.parts.speech import SpeechPart
from facts import STT_ENDPOINT

MODELS = (*sorted(SPEECH_MODELS), STT_ENDPOINT)


def parser() -> tuple[argparse.ArgumentParser, dict[str, list[argparse.Action]]]:
    """The parser, and each model's deploy flags."""
    root = argparse.ArgumentParser(prog="speech-infra", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    deploy = commands.add_parser(
        "deploy", help="deploy the model's stacks (role, endpoint; Kokoro's model cache); wait for InService"
    )
    destroy = commands.add_parser(
        "destroy", help="delete the stacks (the S3 cache and ECR images are retained)"
    )
    status = commands.add_parser("status", help="InService, or why not (exit 0 only when InService)")
    for command in (deploy, destroy, status):
        command.add_argument("model", choices=MODELS, help="speech model")
        flags.add_common(command)
    speech = flags.add_speech(deploy)
    listening = flags.add_listening(deploy)
    flags.add_inference_ami(deploy)
    flags.add_source(deploy)
    flags.add_wait(deploy)
    flags.add_wait(destroy)
    others = {STT_ENDPOINT: speech, **{model: listening for model in SPEECH_MODELS}}
    return root, others


def main(argv: Sequence[str] | None = None) -> int:
    root, others = parser()
    args = root.parse_args(argv)

    def command() -> int:
        given = [a.option_strings[0] for a in others[args.model] if getattr(args, a.dest, None) is not None]
        if given:
            raise ConfigError(
                f"{args.model} takes no {', '.join(given)} (the --stt-* flags set whisper-stt's endpoint, "
                "the others Kokoro's)"
            )
        part: Part
        if args.model == STT_ENDPOINT:
            part = ListeningPart(flags.config_from(args))
        else:
            part = SpeechPart(flags.config_from(args, model=args.model))
        return act(args.command, part.config, [part], getattr(args, "no_wait", False))

    return run(command)


if __name__ == "__main__":
    raise SystemExit(main())
