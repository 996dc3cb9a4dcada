"""`python -m emulator up|down|status|logs|env`.

`up` runs the emulator in the foreground until Ctrl-C (or SIGTERM), printing the `export` lines once
the manifest's endpoints are InService; `up --detach` starts that same command in the background and
returns once it is ready. With `--runtime docker`, `up` first builds the images the manifest's models
name that the engine lacks, from the repository's Dockerfiles, showing each step (`--no-build`
refuses instead); `down` also removes the containers a crashed emulator of the same home left.
A running emulator records itself in `<home>/emulator.json`, which `env`,
`status` and `down` read. Output meant for the shell is on stdout (`eval "$(python -m emulator env)"`);
progress and errors go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from emulator.config import ConfigError, EmulatorConfig
from emulator.controller.processes import pid_alive
from emulator.controller.runtimes import RuntimeUnavailable
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.record import read_record, record_path, write_record
from emulator.server import Emulator, EmulatorStartError, run_emulator

SECRET_NOTE = "# AWS_SECRET_ACCESS_KEY: the secret paired with this key id in EMULATOR_SIGV4_KEYS"


class CliError(RuntimeError):
    """A failure to report in one line (exit status 1)."""


def _write_record(config: EmulatorConfig, emu: Emulator, ready: bool, manifest: str) -> None:
    env = _public_env(config, emu)
    write_record(
        config, {**emu.info(), "ready": ready, "manifest": manifest, "env": env, "home": str(config.home_dir)}
    )


def export_lines(env: dict[str, str], keys_configured: bool) -> str:
    lines = [f"export {name}={value}" for name, value in env.items()]
    if keys_configured:
        lines.append(SECRET_NOTE)
    return "\n".join(lines)


def _config(args: argparse.Namespace) -> EmulatorConfig:
    config = EmulatorConfig.from_env()
    overrides = {
        "runtime": getattr(args, "runtime", None),
        "http_port": getattr(args, "http_port", None),
        "h2_port": getattr(args, "h2_port", None),
        "home": Path(args.home) if getattr(args, "home", None) else None,
    }
    return dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})


# up -----------------------------------------------------------------------------------------------


async def _serve(config: EmulatorConfig, manifest_path: str) -> None:
    manifest = load_manifest(manifest_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    path = record_path(config)
    async with run_emulator(config, manifest, wait=False) as emu:
        try:
            _write_record(config, emu, False, manifest_path)
            waiting = loop.create_task(emu.wait_in_service(manifest))
            stopping = loop.create_task(stop.wait())
            await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                return
            stopping.cancel()
            waiting.result()
            _write_record(config, emu, True, manifest_path)
            names = ", ".join(manifest.endpoints) or "none"
            runtimes = ", ".join(f"{name} ({emu.runtime_arn(name)})" for name in manifest.agent_runtimes)
            print(
                f"# emulator ready (pid {os.getpid()}): endpoints InService: {names}; "
                f"agent runtimes READY: {runtimes or 'none'}",
                flush=True,
            )
            print(f"# control plane + runtime {emu.http_url}, bidirectional stream {emu.h2_url}", flush=True)
            print(export_lines(_public_env(config, emu), bool(config.sigv4_keys)), flush=True)
            await stop.wait()
            print("# stopping: terminating replicas", file=sys.stderr, flush=True)
        finally:
            record = read_record(config)
            if record is not None and record.get("pid") == os.getpid():
                path.unlink(missing_ok=True)


def _public_env(config: EmulatorConfig, emu: Emulator) -> dict[str, str]:
    env = dict(emu.env)
    if config.sigv4_keys:
        env.pop("AWS_SECRET_ACCESS_KEY")
    return env


def cmd_up(args: argparse.Namespace) -> int:
    config = _config(args)
    running = read_record(config)
    if running is not None:
        raise CliError(
            f"an emulator is already running (pid {running['pid']}); stop it with `python -m emulator down`"
        )
    config = dataclasses.replace(config, base_image=args.base_image or config.base_image)
    if config.runtime == "docker":
        _build_images(config, args.file, build=not args.no_build)
    if args.detach:
        return _detach(config, args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe otherwise
    asyncio.run(_serve(config, args.file))
    return 0


def _build_images(config: EmulatorConfig, manifest_path: str, *, build: bool) -> None:
    """Build the manifest's missing images (progress on stderr), or refuse with `build=False`."""
    from emulator.controller.images import ImageBuildError, ensure_images

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


def _detach(config: EmulatorConfig, args: argparse.Namespace) -> int:
    """Start `up` in its own session, logging to <home>/emulator.log; return once it is ready."""
    config.home_dir.mkdir(parents=True, exist_ok=True)
    log_path = config.home_dir / "emulator.log"
    argv = [sys.executable, "-m", "emulator", "up", "-f", str(args.file), "--home", str(config.home_dir)]
    if config.runtime == "docker":
        argv.append("--no-build")  # built above, with the progress on this terminal
    for flag, value in (
        ("--runtime", args.runtime),
        ("--http-port", args.http_port),
        ("--h2-port", args.h2_port),
    ):
        if value is not None:
            argv += [flag, str(value)]
    with log_path.open("wb") as log:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    record = wait_ready(config, child, log_path, config.startup_timeout_s + 60)
    print(f"# emulator ready (pid {child.pid}, log {log_path}); stop it with `python -m emulator down`")
    print(export_lines(record["env"], bool(config.sigv4_keys)))
    return 0


def wait_ready(
    config: EmulatorConfig, child: subprocess.Popen, log_path: Path, timeout_s: float
) -> dict[str, Any]:
    """Wait until the `up` process `child` records itself ready in its home; return that record."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
            raise CliError(f"the emulator exited with status {child.returncode}:\n" + "\n".join(tail))
        record = read_record(config)
        if record is not None and record.get("pid") == child.pid and record.get("ready"):
            return record
        time.sleep(0.2)
    child.terminate()
    raise CliError(f"the emulator was not ready after {timeout_s:g} s (log: {log_path})")


# down / env / status ------------------------------------------------------------------------------


def cmd_down(args: argparse.Namespace) -> int:
    config = _config(args)
    record = read_record(config)
    if record is None:
        print("no running emulator", file=sys.stderr)
        _remove_leftover_containers(config)
        return 0
    pid = int(record["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + config.stop_grace_s + 15
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        print(f"emulator (pid {pid}) did not stop in time: killed", file=sys.stderr)
    else:
        print(f"emulator (pid {pid}) stopped", file=sys.stderr)
    record_path(config).unlink(missing_ok=True)
    if record.get("runtime") == "docker":
        _remove_leftover_containers(config)
    return 0


def _remove_leftover_containers(config: EmulatorConfig) -> None:
    """Remove the containers a dead emulator of this home left (where an engine answers)."""
    from emulator.controller.runtimes.docker import connect, remove_leftovers

    try:
        removed = remove_leftovers(connect(), config.home_dir.resolve())
    except RuntimeUnavailable:
        return
    if removed:
        print(f"removed {len(removed)} container(s) the emulator left: {', '.join(removed)}", file=sys.stderr)


def _running_record(config: EmulatorConfig) -> dict[str, Any]:
    record = read_record(config)
    if record is None:
        raise CliError(
            f"no running emulator (home {config.home_dir}); start one with `python -m emulator up`"
        )
    return record


def cmd_env(args: argparse.Namespace) -> int:
    config = _config(args)
    record = _running_record(config)
    if args.json:
        print(json.dumps(record["env"], indent=2))
    else:
        print(export_lines(record["env"], "AWS_SECRET_ACCESS_KEY" not in record["env"]))
    return 0


def _age(seconds: float | None) -> str:
    if not seconds:
        return "-"
    seconds = max(0, int(time.time() - seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _replica_row(r: dict[str, Any], owner: str) -> list[str]:
    return [
        r["id"],
        owner,
        r["variant"],
        r["deployment"],
        r["phase"],
        "yes" if r["ready"] else "no",
        str(r["restarts"]),
        str(r["sessions"]),
        str(r["port"] or "-"),
        r["ident"] or "-",
        _age(r["started"]),
    ]


def format_status(status: dict[str, Any]) -> str:
    info = status["emulator"]
    out = [
        f"emulator pid {info.get('pid')}  {info.get('http_url')}  {info.get('h2_url')}  "
        f"runtime {info.get('runtime')}",
        f"response streams split: {info.get('rechunk', '-')}",
        "",
    ]
    endpoints = [["ENDPOINT", "STATUS", "CONFIG", "VARIANTS", "READY", "AGE"]]
    replicas = [
        [
            "REPLICA",
            "ENDPOINT",
            "VARIANT",
            "ROLE",
            "PHASE",
            "READY",
            "RESTARTS",
            "SESSIONS",
            "PORT",
            "PROCESS",
            "AGE",
        ]
    ]
    for ep in status["endpoints"]:
        variants = ",".join(f"{v['name']}({v['instance_type']})" for v in ep["variants"]) or "-"
        ready = sum(v["ready"] for v in ep["variants"])
        desired = sum(v["desired"] for v in ep["variants"])
        endpoints.append(
            [ep["name"], ep["status"], ep["config"], variants, f"{ready}/{desired}", _age(ep["created"])]
        )
        for r in ep["replicas"]:
            replicas.append(_replica_row(r, ep["name"]))
    out.append(_table(endpoints))
    runtimes = [["AGENT RUNTIME", "STATUS", "VERSION", "ENDPOINTS", "ARN", "AGE"]]
    for rt in status.get("agent_runtimes", []):
        endpoints_of = ",".join(rt["endpoints"])
        runtimes.append(
            [rt["name"], rt["status"], str(rt["version"]), endpoints_of, rt["arn"], _age(rt["created"])]
        )
        for r in rt["replicas"]:
            replicas.append(_replica_row(r, rt["name"]))
    if len(runtimes) > 1:
        out += ["", _table(runtimes)]
    failures = [
        f"  {item['name']}: {item['failure_reason']}"
        for item in [*status["endpoints"], *status.get("agent_runtimes", [])]
        if item.get("failure_reason")
    ]
    if failures:
        out += ["", "FAILURE REASONS", *failures]
    if len(replicas) > 1:
        out += ["", _table(replicas)]
    events = [["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]]
    events += [
        [_age(e["time"]), e["type"], e["reason"], e["object"], e["message"]] for e in status["events"][-15:]
    ]
    if len(events) > 1:
        out += ["", "EVENTS", _table(events)]
    return "\n".join(out)


def cmd_status(args: argparse.Namespace) -> int:
    config = _config(args)
    status = _status(_running_record(config))
    print(json.dumps(status, indent=2) if args.json else format_status(status))
    return 0


def _status(record: dict[str, Any]) -> dict[str, Any]:
    try:
        return httpx.get(f"{record['http_url']}/_emulator/status", timeout=5, trust_env=False).json()
    except (httpx.HTTPError, ValueError) as exc:
        raise CliError(
            f"the emulator (pid {record['pid']}) does not answer at {record['http_url']}: {exc}"
        ) from exc


def cmd_logs(args: argparse.Namespace) -> int:
    """The last lines of each replica's output (process or container), or of the one named."""
    config = _config(args)
    status = _status(_running_record(config))
    replicas = [r for ep in status["endpoints"] for r in ep["replicas"]]
    chosen = [r for r in replicas if args.replica in (None, r["id"])]
    if not chosen:
        known = ", ".join(r["id"] for r in replicas) or "none"
        raise CliError(f"no replica {args.replica} (replicas: {known})")
    for replica in chosen:
        try:
            lines = Path(replica["log"]).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        print(f"==> {replica['id']} ({replica['ident'] or 'not running'}) {replica['log']} <==")
        print("\n".join(lines[-args.tail :]))
    return 0


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
    for name, help_text in (
        ("down", "stop a detached emulator"),
        ("status", "endpoints, replicas, events"),
        ("env", "print the export lines for a running emulator"),
    ):
        command = sub.add_parser(name, help=help_text)
        if name in {"status", "env"}:
            command.add_argument("--json", action="store_true")
    logs = sub.add_parser("logs", help="the output of the replicas (processes or containers)")
    logs.add_argument("replica", nargs="?", help="one replica id (default: all)")
    logs.add_argument("-n", "--tail", type=int, default=50, help="lines per replica (default 50)")
    for command in sub.choices.values():
        command.add_argument(
            "--home", help="emulator home (default EMULATOR_HOME or ~/.cache/voice-agent-aws/emulator)"
        )
    args = parser.parse_args(argv)
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "logs": cmd_logs, "env": cmd_env}
    try:
        return handlers[args.command](args)
    except (CliError, ConfigError, EmulatorStartError, RuntimeUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
