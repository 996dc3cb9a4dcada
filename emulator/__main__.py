"""`python -m emulator up|build|down|status|logs|metrics|traces|env`: the command line, the way into the
emulator: the arguments, and which module does each command.

`build` builds one image from one of the repository's Dockerfiles, the way `up` builds its images
(what `python -m deploy aws --target local` runs for the cloud assembly's image assets). `up` runs
the emulator in the foreground (emulator.server's `serve`), or with `--detach` in the background until
it is ready (`cli/daemon.py`); with `--runtime docker` it first builds the images the manifest's models
name that the engine lacks, or whose sources changed, from the repository's Dockerfiles, showing each
step (`images/`; `--no-build` refuses instead). `down` stops a running emulator (`cli/daemon.py`); `env`
prints its export lines; `status` and `logs` print its status and every replica's output, `metrics` the
metrics its CloudWatch holds, `traces` the replicas' last traces as timelines (`cli/views.py`).
Output meant for the shell is on stdout (`eval "$(python -m emulator env)"`); progress and errors go to
stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import sys
from pathlib import Path

from emulator.cli import daemon, views
from emulator.config import ConfigError, EmulatorConfig
from emulator.controller.runtimes import RuntimeUnavailable
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.server import EmulatorStartError, serve
from emulator.server.record import export_lines


class CliError(RuntimeError):
    """A failure to report in one line (exit status 1)."""


def _config(args: argparse.Namespace) -> EmulatorConfig:
    config = EmulatorConfig.from_env()
    overrides = {
        "runtime": getattr(args, "runtime", None),
        "http_port": getattr(args, "http_port", None),
        "h2_port": getattr(args, "h2_port", None),
        "home": Path(args.home) if getattr(args, "home", None) else None,
        "base_image": getattr(args, "base_image", None),
    }
    return dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})


def cmd_up(args: argparse.Namespace) -> int:
    config = _config(args)
    daemon.ensure_not_running(config)
    if config.runtime == "docker":
        _build_images(config, args.file, build=not args.no_build)
    if args.detach:
        daemon.detach(config, args.file)
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe otherwise
        asyncio.run(serve(config, args.file))
    return 0


def _build_images(config: EmulatorConfig, manifest_path: str, *, build: bool) -> None:
    """Build the manifest's missing images (progress on stderr), or refuse with `build=False`."""
    from emulator.images import ImageBuildError  # the Docker SDK: only the docker runtime needs it
    from emulator.images.build import ensure_images

    manifest = load_manifest(manifest_path)
    try:
        built = ensure_images(
            manifest.container_images,
            {**config.images, **manifest.images},
            build=build,
            base=config.base_image,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except ImageBuildError as exc:
        raise CliError(str(exc)) from exc
    if built:
        print(f"# built {', '.join(built)}", file=sys.stderr, flush=True)


def _build_args(pairs: list[str]) -> dict[str, str]:
    """`NAME=VALUE` strings (`--build-arg`, as docker build takes them) -> {NAME: VALUE}."""
    arguments = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise CliError(f"--build-arg takes NAME=VALUE, got {pair!r}")
        arguments[name] = value
    return arguments


def cmd_build(args: argparse.Namespace) -> int:
    """Build `--tag` from `--dockerfile` on the offline-capable base, as `up` builds its images; for
    `--platform` when given (another CPU's only where the engine emulates it: images/platforms.py)."""
    from emulator.images import ImageBuildError, docker_client
    from emulator.images.build import BuildRequest, base_for, build_image

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        client = docker_client()
        base = base_for(client, args.base_image or _config(args).base_image, args.platform, progress)
        request = BuildRequest(args.tag, args.dockerfile, _build_args(args.build_arg), platform=args.platform)
        build_image(client, request, base, progress)
    except ImageBuildError as exc:
        raise CliError(str(exc)) from exc
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    daemon.down(_config(args))
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    record = daemon.running_record(_config(args))
    if args.json:
        print(json.dumps(record["env"], indent=2))
    else:
        print(export_lines(record["env"], "AWS_SECRET_ACCESS_KEY" not in record["env"]))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    status = daemon.fetch_status(daemon.running_record(_config(args)))
    print(json.dumps(status, indent=2) if args.json else views.format_status(status))
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    """Every metric the emulator's CloudWatch holds (replicas' EMF lines, PutMetricData), summarized."""
    rows = daemon.fetch_metrics(daemon.running_record(_config(args)), args.window)
    print(json.dumps(rows, indent=2) if args.json else views.format_metrics(rows, args.window))
    return 0


def cmd_traces(args: argparse.Namespace) -> int:
    """The replicas' last traces (the agent's turns) as timelines, the newest last."""
    found = daemon.fetch_traces(daemon.running_record(_config(args)), args.limit)
    if args.json:
        print(json.dumps(found, indent=2))
    else:
        print("\n\n".join(views.timeline(trace) for trace in found) or "no traces yet")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    """The last lines of every replica's output (endpoints' and agent runtimes'), or of the one named."""
    status = daemon.fetch_status(daemon.running_record(_config(args)))
    replicas = views.replicas(status)
    chosen = [r for r in replicas if args.replica in (None, r["id"])]
    if not chosen:
        known = ", ".join(r["id"] for r in replicas) or "none"
        raise CliError(f"no replica {args.replica} (replicas: {known})")
    print(views.format_logs(chosen, args.tail))
    return 0


def _add_build(sub: argparse._SubParsersAction) -> None:
    """`build`: one image from one Dockerfile, as `up` builds them."""
    build = sub.add_parser("build", help="build one image from a Dockerfile of this repository")
    build.add_argument("--dockerfile", required=True, help="relative to the repository root (the context)")
    build.add_argument("--tag", required=True, help="the image name to give it")
    build.add_argument(
        "--platform",
        help="linux/amd64 or linux/arm64 (default: the engine's; another CPU's runs under QEMU, "
        "scripts/docker-engine emulation)",
    )
    build.add_argument("--base-image", help="BASE_IMAGE (default python:3.12-slim, or the offline base)")
    build.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a build argument, again for each (container_kit/Dockerfile: PACKAGE=tts, ...)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m emulator", description="Local SageMaker (and Bedrock) emulator."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the emulator and the manifest's endpoints")
    up.add_argument(
        "-f", "--file", default=str(DEFAULT_MANIFEST), help="manifest (default: compose/emulator.yaml)"
    )
    up.add_argument("--detach", action="store_true", help="run in the background; return once InService")
    up.add_argument("--runtime", choices=["process", "docker"])
    up.add_argument(
        "--no-build", action="store_true", help="docker: fail when an image is missing instead of building it"
    )
    up.add_argument("--base-image", help="docker: BASE_IMAGE of the images built (default python:3.12-slim)")
    up.add_argument("--http-port", type=int)
    up.add_argument("--h2-port", type=int)
    _add_build(sub)
    for name, help_text in (
        ("down", "stop a detached emulator"),
        ("status", "endpoints, agent runtimes, replicas, events"),
        ("env", "print the export lines for a running emulator"),
    ):
        command = sub.add_parser(name, help=help_text)
        if name in {"status", "env"}:
            command.add_argument("--json", action="store_true")
    logs = sub.add_parser("logs", help="the output of every replica (processes or containers)")
    logs.add_argument("replica", nargs="?", help="one replica id (default: all)")
    logs.add_argument("-n", "--tail", type=int, default=50, help="lines per replica (default 50)")
    metrics = sub.add_parser("metrics", help="the metrics of every replica (EMF lines) and PutMetricData")
    metrics.add_argument("-w", "--window", type=float, default=600.0, help="seconds back (default 600)")
    metrics.add_argument("--json", action="store_true")
    traces = sub.add_parser("traces", help="the replicas' last traces (the agent's turns) as timelines")
    traces.add_argument("-n", "--limit", type=int, default=1, help="traces (default 1: the last turn)")
    traces.add_argument("--json", action="store_true")
    for command in sub.choices.values():
        command.add_argument(
            "--home", help="emulator home (default EMULATOR_HOME or ~/.cache/voice-agent-aws/emulator)"
        )
    args = parser.parse_args(argv)
    handlers = {
        "up": cmd_up,
        "build": cmd_build,
        "down": cmd_down,
        "status": cmd_status,
        "logs": cmd_logs,
        "metrics": cmd_metrics,
        "traces": cmd_traces,
        "env": cmd_env,
    }
    try:
        return handlers[args.command](args)
    except (CliError, daemon.DaemonError, ConfigError, EmulatorStartError, RuntimeUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
