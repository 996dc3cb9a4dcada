"""The record a running emulator keeps of itself in `<home>/emulator.json` (pid, URLs, CA bundle, the
environment `python -m emulator env` prints, readiness), so that `env`, `status`, `logs` and `down`
find it from another process, and the `export` lines that environment is printed as. Written
atomically; a record left by a dead process counts as none."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from emulator.config import EmulatorConfig
from emulator.processes import pid_alive

RECORD_FILE = "emulator.json"
SECRET_NOTE = "# AWS_SECRET_ACCESS_KEY: the secret paired with this key id in EMULATOR_SIGV4_KEYS"


def record_path(config: EmulatorConfig) -> Path:
    return config.home_dir / RECORD_FILE


def read_record(config: EmulatorConfig) -> dict[str, Any] | None:
    """The running emulator's record, or None (a record left by a dead process is removed)."""
    path = record_path(config)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not pid_alive(int(record.get("pid", 0))):
        path.unlink(missing_ok=True)
        return None
    return record


def write_record(config: EmulatorConfig, record: dict[str, Any]) -> None:
    path = record_path(config)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(path)


def public_env(config: EmulatorConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The emulator's environment for clients (without the secret when SigV4 keys are configured), and
    `EMULATOR_HOME`, so that `python -m emulator status|logs|env|down` and the tools that ask
    `python -m emulator env` find this emulator again from a shell that evaluated these lines (an
    emulator started with `--home H` included)."""
    public = {**env, "EMULATOR_HOME": str(config.home_dir)}
    if config.sigv4_keys:
        public.pop("AWS_SECRET_ACCESS_KEY")
    return public


def export_lines(env: Mapping[str, str], keys_configured: bool) -> str:
    """`env` as the lines `eval "$(python -m emulator env)"` runs."""
    lines = [f"export {name}={value}" for name, value in env.items()]
    if keys_configured:
        lines.append(SECRET_NOTE)
    return "\n".join(lines)
