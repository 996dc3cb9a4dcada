"""`python -m deploy COMMAND [PART ...]`: the one command line of the deploy.

The parts are what the product's definition names (deploy/product.py): `kokoro-82m` (the speech
endpoint), `whisper-stt` (the speech-to-text endpoint, a second GPU instance: with none named, only with
`--listen`, except for destroy) and `voice_agent` (the agent's runtime, which speaks and listens through
them). None named: the whole system, in order.

    deploy [PART ...]       check prerequisites, deploy, wait for InService/READY (`aws` is its old name)
    synth [PART ...]        synthesize the stacks offline into cdk.out
    destroy [PART ...]      delete the stacks, last deployed first; say what is retained
    status [PART ...]       the endpoints and the runtime (a part and what it uses): ready, or why not
    plan --users N          instances and cost per hour for N concurrent listeners (deploy/capacity.py)
    demo ...                talk to the deployed agent (`python -m tools.demo`, run as a program)
    manifests [--check]     write the emulator's manifests (compose/*.yaml) from the definition

The article's commands are aliases of it: `speech-infra COMMAND MODEL ...` is
`python -m deploy COMMAND MODEL ...` for one speech endpoint (`--image-uri` its image), and
`agent-infra COMMAND ...` is `python -m deploy COMMAND voice_agent ...` (`agent-infra demo` is `demo`).
A problem the user can fix is one `error:` line and exit code 2 (`run`), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from deploy import flags
from deploy.capacity import capacity_file, describe, measured_capacity, plan
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import REPO_ROOT, DeployConfig, current_product
from deploy.errors import DeployError
from deploy.gpu import is_gpu_instance
from deploy.manifests import drifted, render, write
from deploy.orchestrate import act, parts_of
from deploy.product import FIRST_AUDIO_ALARM_MS

# `demo` is the client tool's own program, run as one: deploy imports no tool, so the demo's flags and
# output stay its own (`python -m deploy demo --help`).
DEMO_COMMAND = (sys.executable, "-m", "tools.demo")
COMPOSE = REPO_ROOT / "compose"
ALIASES = {"aws": "deploy"}
ACTIONS = ("deploy", "destroy", "status")
"""What the aliases do (`speech-infra` and `agent-infra` have no synth)."""


def parser(prog: str = "python -m deploy") -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    commands = root.add_subparsers(dest="command", required=True)
    names, listening = current_product().parts, current_product().listening.name
    deploy = commands.add_parser("deploy", aliases=["aws"], help="deploy the parts and wait until they serve")
    synth = commands.add_parser("synth", help="synthesize every stack offline into cdk.out")
    destroy = commands.add_parser("destroy", help="delete the stacks, last deployed first")
    status = commands.add_parser("status", help="the endpoints and the runtime: ready, or why not")
    for command in (deploy, synth):
        flags.add_parts(command, names, f"all, {listening} with --listen")
        flags.add_building(command)
    flags.add_parts(destroy, names, f"all, {listening} included")
    flags.add_parts(status, names, f"all, {listening} with --listen")
    flags.add_endpoints(status)
    destroy.add_argument("--bedrock-model-id", help="accepted, not needed: the stacks are found by name")
    for command in (deploy, destroy):
        flags.add_wait(command)
    for command in (deploy, synth, destroy, status):
        flags.add_common(command)
    add_plan(commands)
    commands.add_parser("demo", help="talk to the deployed agent (tools.demo; `demo --help`)")
    manifests = commands.add_parser("manifests", help="write the emulator's manifests from the definition")
    manifests.add_argument("--outdir", type=Path, default=COMPOSE, help="default: compose/")
    manifests.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file differs")
    return root


def add_plan(commands: argparse._SubParsersAction) -> None:
    planned = commands.add_parser(
        "plan", help="instances and cost per hour for N concurrent listeners, from the measured capacity"
    )
    planned.add_argument("--users", type=int, required=True, help="concurrent listeners to serve")
    planned.add_argument("--instance-type", help=f"default {current_product().speech.instance_type}")
    planned.add_argument(
        "--target-concurrency", type=float, help="sessions per instance (default: the measured capacity)"
    )
    planned.add_argument(
        "--price-per-hour", type=float, help="USD per instance hour (default: us-east-1 on-demand, if listed)"
    )
    planned.add_argument("--json", action="store_true", help="the plan as one JSON object")


def run(command: Callable[[], int]) -> int:
    """The error rule: a `DeployError` is its message and exit code 2."""
    try:
        return command()
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def main(
    argv: Sequence[str] | None = None, *, prog: str = "python -m deploy", speech_only: bool = False
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["demo"]:
        return subprocess.run([*DEMO_COMMAND, *argv[1:]], check=False).returncode
    root = parser(prog)
    args = root.parse_args(argv)
    command = ALIASES.get(args.command, args.command)
    named = list(dict.fromkeys(getattr(args, "parts", [])))
    if speech_only:
        endpoints = [endpoint.name for endpoint in current_product().endpoints]
        if command not in ACTIONS or len(named) != 1 or named[0] not in endpoints:
            root.error(f"{prog} takes a command and one speech model: {' or '.join(endpoints)}")
    return run(lambda: dispatch(command, args, named))


def dispatch(command: str, args: argparse.Namespace, named: list[str]) -> int:
    if command == "manifests":
        return manifests(args)
    config = flags.config_from(args, named)
    if command == "plan":
        return print_plan(args, config)
    # Destroy takes the speech-to-text stacks down whether or not `--listen` is given: an instance left
    # running bills by the hour; stacks that do not exist are skipped.
    parts = parts_of(config, named, listening=config.listen or command == "destroy")
    if command == "synth":
        summary = [line for part in parts for line in part.summary()]  # before synthesis: fails fast
        assembly = CdkToolkit(config).synth(parts)
        print(f"synthesized {', '.join(stack for part in parts for stack in part.stacks)} into {assembly}")
        print("\n".join(summary))
        return 0
    return act(command, config, parts, wait=not getattr(args, "no_wait", False))


def manifests(args: argparse.Namespace) -> int:
    """Write the manifests from the definition, or (`--check`) name those that differ from it."""
    rendered = render(current_product(), FIRST_AUDIO_ALARM_MS)
    if args.check:
        stale = drifted(args.outdir, rendered)
        for name in stale:
            print(f"{args.outdir / name} differs from deploy/product.py: run `python -m deploy manifests`")
        return 1 if stale else 0
    for path in write(args.outdir, rendered):
        print(f"wrote {path}")
    return 0


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


def speech_infra(argv: Sequence[str] | None = None) -> int:
    """`speech-infra deploy|destroy|status MODEL ...`: the article's name for `python -m deploy` on one
    speech endpoint (`kokoro-82m` or `whisper-stt`)."""
    return main(argv, prog="speech-infra", speech_only=True)


def agent_infra(argv: Sequence[str] | None = None) -> int:
    """`agent-infra deploy|destroy|status|demo ...`: the article's name for `python -m deploy` on the
    agent's runtime (`voice_agent`), whose status reports the endpoints it uses too."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in ACTIONS:
        argv = [argv[0], current_product().agent.name, *argv[1:]]
    return main(argv, prog="agent-infra")
