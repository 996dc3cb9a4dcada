"""`python -m deploy aws|synth|destroy|status|plan`: the whole system at once (speech endpoint, with
`--listen` the speech-to-text endpoint, then agent; destroy takes down whichever of them exist);
`plan --users N`: the instances and the hourly cost for N concurrent listeners, from the
measured capacity of a replica (deploy/capacity.py)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import asdict

from deploy.capacity import capacity_file, describe, measured_capacity, plan
from deploy.commands import act, flags, run, toolkit
from deploy.config import REPO_ROOT, DeployConfig
from deploy.gpu import is_gpu_instance
from deploy.parts import all_parts


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m deploy", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)
    aws = commands.add_parser(
        "aws",
        help="check prerequisites, deploy the speech stacks (with --listen the speech-to-text stacks) "
        "then the agent stacks",
    )
    synth = commands.add_parser("synth", help="synthesize every stack offline into cdk.out")
    destroy = commands.add_parser(
        "destroy", help="delete the agent stacks, then the speech-to-text and speech stacks"
    )
    status = commands.add_parser("status", help="the endpoints and the runtime: ready, or why not")
    for command in (aws, synth):
        flags.add_speech(command, image_flag="--tts-image-uri")
        flags.add_inference_ami(command)
        flags.add_listen(command)
        flags.add_listening(command)
        flags.add_agent(command, image_flag="--agent-image-uri")
        flags.add_source(command)
    flags.add_wait(aws)
    flags.add_wait(destroy)
    status.add_argument("--tts-endpoint", help="SageMaker endpoint name (default kokoro-82m)")
    flags.add_listen(status)
    planned = commands.add_parser(
        "plan", help="instances and cost per hour for N concurrent listeners, from the measured capacity"
    )
    planned.add_argument("--users", type=int, required=True, help="concurrent listeners to serve")
    planned.add_argument("--instance-type", help="default ml.g5.xlarge")
    planned.add_argument(
        "--target-concurrency", type=float, help="sessions per instance (default: the measured capacity)"
    )
    planned.add_argument(
        "--price-per-hour", type=float, help="USD per instance hour (default: us-east-1 on-demand, if listed)"
    )
    planned.add_argument("--json", action="store_true", help="the plan as one JSON object")
    flags.add_rehearsal(aws)
    for command in (aws, synth, destroy, status):
        flags.add_common(command)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def command() -> int:
        config = flags.config_from(args)
        if args.command == "plan":
            return print_plan(args, config)
        # Destroy takes the speech-to-text stacks down whether or not `--listen` is given: an instance
        # left running bills by the hour; stacks that do not exist are skipped.
        parts = all_parts(config, listening=config.listen or args.command == "destroy")
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


def print_plan(args: argparse.Namespace, config: DeployConfig) -> int:
    given = args.target_concurrency is not None or bool(os.environ.get("DEPLOY_TARGET_CONCURRENCY"))
    gpu = is_gpu_instance(config.instance_type)
    capacity = None if given else measured_capacity(capacity_file(REPO_ROOT, gpu))
    sessions = config.target_concurrency if capacity is None else capacity.sessions
    result = plan(args.users, config.instance_type, sessions, args.price_per_hour)
    if args.json:
        where = None if capacity is None else {"source": str(capacity.source), "measured_on": capacity.where}
        print(json.dumps({**asdict(result), "cost_per_hour": result.cost_per_hour, "capacity": where}))
    else:
        print("\n".join(describe(result, capacity)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
