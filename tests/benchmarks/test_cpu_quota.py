"""scripts/cpu-quota: the command and what it starts run in a cgroup of their own with CPUS cores' worth
of time every 10 ms; the command's exit status is the script's, and the cgroup goes with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

V2 = Path("/sys/fs/cgroup/cgroup.controllers")
V1 = Path("/sys/fs/cgroup/cpu")
HAS_CPU_CONTROLLER = (V2.exists() and "cpu" in V2.read_text().split()) or V1.is_dir()
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not HAS_CPU_CONTROLLER, reason="needs root and a cgroup CPU controller"
)
# What the command sees: its CPU cgroup and that group's limit, as "quota period" (v2's cpu.max).
REPORT = (
    'group=$(sed -n "s/^[0-9]*:cpu[^:]*:\\|^0:://p" /proc/self/cgroup | grep quota); '
    "if [ -d /sys/fs/cgroup/cpu ]; then d=/sys/fs/cgroup/cpu$group; "
    'echo "$group $(cat $d/cpu.cfs_quota_us) $(cat $d/cpu.cfs_period_us)"; '
    'else echo "$group $(cat /sys/fs/cgroup$group/cpu.max)"; fi'
)


def cpu_quota(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [str(REPO / "scripts" / "cpu-quota"), *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_the_command_runs_on_its_share_of_the_cores_and_the_group_goes_after() -> None:
    run = cpu_quota("1.3", "bash", "-c", REPORT)
    assert run.returncode == 0, run.stderr
    group, quota, period = run.stdout.split()
    assert (int(quota), int(period)) == (13000, 10000)
    root = V1 if V1.is_dir() else V2.parent
    assert not (root / group.lstrip("/")).exists()


def test_the_commands_exit_status_is_the_scripts() -> None:
    assert cpu_quota("0.5", "bash", "-c", "exit 7").returncode == 7


@pytest.mark.parametrize("cpus", ["0.01", "two"])
def test_a_share_that_is_no_number_of_cores_is_refused(cpus: str) -> None:
    run = cpu_quota(cpus, "true")
    assert run.returncode == 2 and "CPUS must be a number of cores" in run.stderr


def test_the_engine_reads_the_quota_it_runs_under_and_sleeps_between_operators_there() -> None:
    """`tts/engines/cpu_quota.py` on this kernel's real cgroups: the share scripts/cpu-quota set, and the
    ONNX engine's choice not to spin under it (`TTS_SPIN=auto`)."""
    probe = (
        "from tts.engines.cpu_quota import quota_cores; from tts.engines.onnx.engine import _spins; "
        "print(quota_cores(), _spins('auto', quota_cores()))"
    )
    run = cpu_quota("0.5", sys.executable, "-c", probe)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0.5", "False"]
