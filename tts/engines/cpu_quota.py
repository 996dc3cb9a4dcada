"""The CPU time this process may use: a CFS bandwidth quota on its cgroup or on a group above it
(`docker run --cpus`, a Kubernetes CPU limit, systemd's CPUQuota, `scripts/cpu-quota`), in cores; None
where no quota applies (the process may use every core it is given)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

PROC_CGROUP = Path("/proc/self/cgroup")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def quota_cores(proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT) -> float | None:
    """The smallest quota over the process's CPU cgroup and the groups above it, as cores (quota over
    period): cgroup v2's `cpu.max` ("max 100000" is none), v1's `cpu.cfs_quota_us` (-1 is none) over
    `cpu.cfs_period_us`. A group path that is not under the mount (a container that sees its own group
    as the root) is read from the mount's root."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if not controllers:
            limits += _limits(root, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            mount = root / controllers if (root / controllers).is_dir() else root / "cpu"
            limits += _limits(mount, path, _v1_quota)
    return min(limits, default=None)


def _limits(mount: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    group = mount / path.lstrip("/")
    if not group.is_dir():
        group = mount
    limits = []
    for directory in (group, *group.parents):
        if quota := read(directory):
            limits.append(quota)
        if directory == mount:
            break
    return limits


def _v2_quota(group: Path) -> float | None:
    try:
        quota, period = (group / "cpu.max").read_text().split()
        return int(quota) / int(period)
    except (OSError, ValueError):  # no file in this group, or "max": no quota
        return None


def _v1_quota(group: Path) -> float | None:
    try:
        quota = int((group / "cpu.cfs_quota_us").read_text())
        period = int((group / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None
