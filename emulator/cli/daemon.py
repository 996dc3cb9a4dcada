"""The emulator as a daemon, seen from another process: the command line and the tools that start it.

`detach` starts `python -m emulator up` (emulator.server's `serve`) in its own session, logging to
`<home>/emulator.log`, and returns once it is ready (`wait_ready`); `down` stops it (SIGTERM, SIGKILL
after the grace period plus 15 s) and removes the containers a crashed emulator of the same home left.
A running emulator records itself in `<home>/emulator.json` (emulator/server/record.py);
`running_record` and the `fetch_*` functions read it back and ask its operator's routes
(emulator/admin/). Output meant for the shell is on stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from emulator.config import EmulatorConfig
from emulator.controller.runtimes import RuntimeUnavailable
from emulator.processes import pid_alive
from emulator.server.record import export_lines, read_record, record_path

LOG_FILE = "emulator.log"


class DaemonError(RuntimeError):
    """A failure to report in one line (the command exits with status 1)."""


def ensure_not_running(config: EmulatorConfig) -> None:
    running = read_record(config)
    if running is not None:
        raise DaemonError(
            f"an emulator is already running (pid {running['pid']}); stop it with `python -m emulator down`"
        )


def detach(config: EmulatorConfig, manifest_path: str) -> None:
    """Start `up` in its own session, logging to <home>/emulator.log; return once it is ready."""
    config.home_dir.mkdir(parents=True, exist_ok=True)
    log_path = config.home_dir / LOG_FILE
    argv = [sys.executable, "-m", "emulator", "up", "-f", str(manifest_path), "--home", str(config.home_dir)]
    argv += [
        "--runtime",
        config.runtime,
        "--http-port",
        str(config.http_port),
        "--h2-port",
        str(config.h2_port),
    ]
    if config.runtime == "docker":
        argv.append("--no-build")  # built before, with the progress on this terminal
    with log_path.open("wb") as log:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    record = wait_ready(config, child, log_path, config.startup_timeout_s + 60)
    print(f"# emulator ready (pid {child.pid}, log {log_path}); stop it with `python -m emulator down`")
    print(export_lines(record["env"], bool(config.sigv4_keys)))


def wait_ready(
    config: EmulatorConfig, child: subprocess.Popen, log_path: Path, timeout_s: float
) -> dict[str, Any]:
    """Wait until the `up` process `child` records itself ready in its home; return that record."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
            raise DaemonError(f"the emulator exited with status {child.returncode}:\n" + "\n".join(tail))
        record = read_record(config)
        if record is not None and record.get("pid") == child.pid and record.get("ready"):
            return record
        time.sleep(0.2)
    child.terminate()
    raise DaemonError(f"the emulator was not ready after {timeout_s:g} s (log: {log_path})")


# down ---------------------------------------------------------------------------------------------


def down(config: EmulatorConfig) -> None:
    """Stop the running emulator of this home (it stops its replicas), if there is one."""
    record = read_record(config)
    if record is None:
        print("no running emulator", file=sys.stderr)
        _remove_leftover_containers(config)
        return
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


def _remove_leftover_containers(config: EmulatorConfig) -> None:
    """Remove the containers a dead emulator of this home left (where an engine answers)."""
    from emulator.controller.runtimes.docker import connect, remove_leftovers

    try:
        removed = remove_leftovers(connect(), config.home_dir.resolve())
    except RuntimeUnavailable:
        return
    if removed:
        print(f"removed {len(removed)} container(s) the emulator left: {', '.join(removed)}", file=sys.stderr)


# a running emulator, from another process -----------------------------------------------------------


def running_record(config: EmulatorConfig) -> dict[str, Any]:
    record = read_record(config)
    if record is None:
        raise DaemonError(
            f"no running emulator (home {config.home_dir}); start one with `python -m emulator up`"
        )
    return record


def _operator_get(record: dict[str, Any], route: str, params: dict[str, Any] | None = None) -> Any:
    """`GET /_emulator/<route>` of the running emulator `record` describes (emulator/admin/routes.py), its
    JSON."""
    try:
        answer = httpx.get(
            f"{record['http_url']}/_emulator/{route}", params=params, timeout=5, trust_env=False
        )
        found = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise DaemonError(
            f"the emulator (pid {record['pid']}) does not answer at {record['http_url']}: {exc}"
        ) from exc
    if answer.status_code != 200:
        raise DaemonError(found.get("error", answer.text) if isinstance(found, dict) else answer.text)
    return found


def fetch_metrics(record: dict[str, Any], window_s: float) -> list[dict[str, Any]]:
    return _operator_get(record, "metrics", {"window_s": window_s})


def fetch_traces(record: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    return _operator_get(record, "traces", {"limit": limit})


def fetch_status(record: dict[str, Any]) -> dict[str, Any]:
    return _operator_get(record, "status")
