"""The record a running emulator keeps of itself in `<home>/emulator.json` (pid, URLs, CA bundle, the
environment `python -m emulator env` prints, readiness), so that `env`, `status`, `logs` and `down`
find it from another process. Written atomically; a record left by a dead process counts as none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from emulator.config import EmulatorConfig
from emulator.processes import pid_alive

RECORD_FILE = "emulator.json"


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
