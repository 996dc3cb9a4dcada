"""tts/engines/cpu_quota.py on cgroup trees laid out as the kernel lays them out: v2 and v1, a quota on
the process's group or on one above it, no quota, and a container that sees its own group as the root.
(On this kernel's real groups, under scripts/cpu-quota: tests/benchmarks/test_cpu_quota.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tts.config import TTSConfig
from tts.engines.cpu_quota import quota_cores
from tts.engines.onnx.engine import _spins


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def tree(tmp_path: Path, proc: str, files: dict[str, str]) -> tuple[Path, Path]:
    write(tmp_path / "proc" / "cgroup", proc)
    for name, text in files.items():
        write(tmp_path / "sys" / name, text)
    return tmp_path / "proc" / "cgroup", tmp_path / "sys"


@pytest.mark.parametrize(
    ("proc", "files", "cores"),
    [
        # v2: the process's own group, "quota period"
        ("0::/app/worker\n", {"app/worker/cpu.max": "150000 100000\n"}, 1.5),
        # v2: no quota on the group, one on its parent
        ("0::/app/worker\n", {"app/worker/cpu.max": "max 100000\n", "app/cpu.max": "50000 100000\n"}, 0.5),
        # v2: the smallest of the two
        ("0::/a/b\n", {"a/b/cpu.max": "300000 100000\n", "a/cpu.max": "200000 100000\n"}, 2.0),
        # v2: no quota anywhere
        ("0::/a\n", {"a/cpu.max": "max 100000\n"}, None),
        # v1 (cpu and cpuacct mounted together), a hybrid host's unified line beside it
        (
            "4:cpu,cpuacct:/docker/abc\n0::/\n",
            {
                "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "130000\n",
                "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
            },
            1.3,
        ),
        # v1: -1 is no quota
        ("1:cpu:/x\n", {"cpu/x/cpu.cfs_quota_us": "-1\n", "cpu/x/cpu.cfs_period_us": "100000\n"}, None),
        # v1 in a container: its group's path is the host's, its own group is the mount's root
        (
            "1:cpu:/kubepods/pod1/c1\n",
            {"cpu/cpu.cfs_quota_us": "25000\n", "cpu/cpu.cfs_period_us": "100000\n"},
            0.25,
        ),
        # no cgroup files at all (not Linux's layout)
        ("0::/\n", {}, None),
    ],
)
def test_the_quota_is_the_smallest_on_the_way_to_the_root(
    tmp_path: Path, proc: str, files: dict[str, str], cores: float | None
) -> None:
    assert quota_cores(*tree(tmp_path, proc, files)) == cores


def test_a_process_without_a_cgroup_file_has_no_quota(tmp_path: Path) -> None:
    assert quota_cores(tmp_path / "missing", tmp_path) is None


def test_the_engine_spins_where_no_quota_takes_the_wait_from_it() -> None:
    assert _spins("auto", None) and not _spins("auto", 1.3)
    assert _spins("on", 1.3) and not _spins("off", None)
    with pytest.raises(ValueError, match="TTS_SPIN"):
        TTSConfig(spin="sometimes")
