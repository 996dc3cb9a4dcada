"""The sessions one replica keeps gap-free, as `python -m benchmarks capacity` measured them, and what a
deployment for N concurrent listeners needs from that figure (`python -m deploy plan --users N`).

Which measurement: the file DEPLOY_CAPACITY_FILE names; else, for a GPU instance, a GPU's: the GPU check's
last run here (`out/gpu-check/gpu_check.json`: `scripts/gpu-check --bundle`'s `run --out out/gpu-check`,
the sessions its batched torch engine kept gap-free) or one committed with the project
(`benchmarks/results/gpu_check.json`); else the last capacity study on this machine
(`out/benchmarks/capacity.json`, the study's default output), else the one committed with the project
(`benchmarks/results/capacity.json`; BENCHMARKS.md, "Capacity", names its machine). The figure is the
autoscaling target (concurrent requests per instance: a session is one bidirectional stream) unless
`--target-concurrency` sets one. A measurement says where it ran; a GPU instance planned on a CPU
replica's figure scales early rather than with gaps (the CPU replica is the slower one: RTF 0.22-0.67
against well under 0.1 on an A10G), and the plan says so.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from deploy.errors import ConfigError
from deploy.gpu import is_gpu_instance

MEASURED_HERE = Path("out/benchmarks/capacity.json")
COMMITTED = Path("benchmarks/results/capacity.json")
GPU_MEASURED_HERE = Path("out/gpu-check/gpu_check.json")
GPU_COMMITTED = Path("benchmarks/results/gpu_check.json")
# SageMaker real-time inference, on-demand, us-east-1, USD per instance hour (aws.amazon.com/sagemaker/
# pricing, read October 2025). Prices change and differ by region: `--price-per-hour` gives yours.
PRICE_PER_HOUR = {"ml.g4dn.xlarge": 0.7364, "ml.g5.xlarge": 1.408, "ml.g5.2xlarge": 1.515}


@dataclass(frozen=True)
class Capacity:
    sessions: int
    source: Path
    engine: str
    device: str
    cpu: str
    cores: int

    @property
    def where(self) -> str:
        return f"{self.engine} on {self.device}, {self.cores} cores of {self.cpu}"

    @property
    def on_gpu(self) -> bool:
        """Measured on CUDA (the torch engine's `cuda:0`), not on a CPU replica."""
        return self.device.startswith("cuda")


def capacity_file(root: Path, gpu: bool = True) -> Path:
    """The measurement the deploy reads for the repository at `root`, for a `gpu` instance or not (see
    the module docstring)."""
    named = os.environ.get("DEPLOY_CAPACITY_FILE")
    if named:
        return Path(named).expanduser()
    for measured in (GPU_MEASURED_HERE, GPU_COMMITTED) if gpu else ():
        if (root / measured).is_file():
            return root / measured
    here = root / MEASURED_HERE
    return here if here.is_file() else root / COMMITTED


def measured_capacity(path: Path) -> Capacity:
    """The capacity study's figure from `path` (`capacity_file`)."""
    try:
        report = json.loads(path.read_text())
        where = report["where"]
        capacity = Capacity(
            int(report["capacity"]),
            path,
            str(where["engine"]),
            str(where["device"]),
            str(where["cpu"]),
            int(where["cores"]),
        )
    except FileNotFoundError as exc:
        raise ConfigError(f"no capacity measurement at {path}: run `python -m benchmarks capacity`") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a capacity study's output ({type(exc).__name__}: {exc})") from exc
    if capacity.sessions < 1:
        raise ConfigError(
            f"{path}: the replica measured there kept no session gap-free ({capacity.where}); "
            "measure on a quieter or faster machine, or give --target-concurrency"
        )
    return capacity


@dataclass(frozen=True)
class Plan:
    users: int
    instance_type: str
    sessions_per_instance: float
    instances: int
    price_per_hour: float | None

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.price_per_hour is None else round(self.instances * self.price_per_hour, 2)


def plan(users: int, instance_type: str, sessions_per_instance: float, price_per_hour: float | None) -> Plan:
    """Instances for `users` concurrent listeners at `sessions_per_instance` each; the hourly cost at
    `price_per_hour` (default: PRICE_PER_HOUR's for the type, if it lists it)."""
    if users < 1:
        raise ConfigError(f"--users must be at least 1, got {users}")
    if not sessions_per_instance > 0:
        raise ConfigError(f"sessions per instance must be positive, got {sessions_per_instance}")
    if price_per_hour is not None and not price_per_hour > 0:
        raise ConfigError(f"--price-per-hour must be positive, got {price_per_hour}")
    price = price_per_hour if price_per_hour is not None else PRICE_PER_HOUR.get(instance_type)
    instances = math.ceil(users / sessions_per_instance)
    return Plan(users, instance_type, sessions_per_instance, instances, price)


def describe(result: Plan, capacity: Capacity | None) -> list[str]:
    """The plan as the command prints it."""
    lines = []
    if capacity is None:
        lines.append(
            f"capacity: {result.sessions_per_instance:g} sessions per instance (--target-concurrency)"
        )
    else:
        lines.append(
            f"capacity: {capacity.sessions} gap-free sessions per replica, measured on {capacity.where} "
            f"({capacity.source})"
        )
        if is_gpu_instance(result.instance_type) and not capacity.on_gpu:
            lines.append(
                f"  a CPU replica's figure for a GPU instance ({result.instance_type}): it scales early "
                "rather than with gaps; run the study where `scripts/gpu-check` runs for the GPU's own"
            )
    cost = (
        f"${result.cost_per_hour:,.2f} an hour (${result.price_per_hour:g} each)"
        if result.cost_per_hour is not None
        else f"no price listed for {result.instance_type}: give --price-per-hour"
    )
    lines.append(f"{result.users} concurrent listeners: {result.instances} x {result.instance_type}, {cost}")
    lines.append(
        f"  python -m deploy aws --instance-type {result.instance_type} "
        f"--max-instance-count {result.instances} --target-concurrency {result.sessions_per_instance:g}"
    )
    return lines
