"""scripts/avx2-only: the Python processes it runs see an AVX2-only CPU (what picks onnxruntime's, torch's
and numpy's kernels), and their own SIGSEGV handlers still work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import vector_extensions
from tests.support.paths import REPO

CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
FLAGS = next((line.split() for line in CPUINFO.splitlines() if line.startswith("flags")), [])
pytestmark = pytest.mark.skipif(
    "avx512f" not in FLAGS or "cpuid_fault" not in FLAGS or "AVX512F" not in vector_extensions(),
    reason="needs AVX-512 to hide (not hidden already, as in a suite under the mask) and CPUID faulting",
)
SEEN = (
    "from benchmarks.report import vector_extensions; "
    "import torch; print(vector_extensions(), torch.backends.cpu.get_cpu_capability())"
)


def avx2_only(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / "scripts" / "avx2-only"), *command], capture_output=True, text=True, timeout=120, cwd=REPO
    )


def test_python_sees_avx2_and_fma_and_nothing_wider() -> None:
    plain = subprocess.run([sys.executable, "-c", SEEN], capture_output=True, text=True, cwd=REPO, check=True)
    assert "AVX512F" in plain.stdout
    masked = avx2_only(sys.executable, "-c", SEEN)
    assert masked.returncode == 0, masked.stderr
    assert masked.stdout.split() == ["AVX2+FMA3", "AVX2"]


def test_a_real_crash_still_reaches_the_processs_own_handler() -> None:
    """Python's faulthandler (pytest turns it on) is called for every SIGSEGV that is not a CPUID."""
    crash = avx2_only(sys.executable, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)")
    assert crash.returncode == -11
    assert "Fatal Python error: Segmentation fault" in crash.stderr
