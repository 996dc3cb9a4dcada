"""Build-time guard for the GPU image: any installed torch must be >= 2.10.0 (PYSEC-2026-2286)."""

import sys
from importlib.metadata import PackageNotFoundError, version

MINIMUM = (2, 10, 0)

try:
    installed = version("torch")
except PackageNotFoundError:
    sys.exit(0)
numbers = tuple(int(part) for part in installed.split("+")[0].split(".")[:3])
if numbers < MINIMUM:
    sys.exit(f"torch {installed} is affected by PYSEC-2026-2286; need >= 2.10.0")
