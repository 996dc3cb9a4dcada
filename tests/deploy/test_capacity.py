"""The capacity the deploy reads (`benchmarks capacity`'s output) and `python -m deploy plan --users N`:
which measurement, the autoscaling target it gives, the instances and the cost, typed errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy.__main__ import main as deploy_main
from deploy.capacity import (
    COMMITTED,
    GPU_COMMITTED,
    GPU_MEASURED_HERE,
    MEASURED_HERE,
    PRICE_PER_HOUR,
    capacity_file,
    describe,
    measured_capacity,
    plan,
)
from deploy.config import REPO_ROOT, DeployConfig
from deploy.errors import ConfigError


def study(path: Path, capacity: int, device: str = "CPUExecutionProvider") -> Path:
    """A capacity study's output as `benchmarks/capacity.py` writes it (its fields the deploy reads; the
    GPU check's `gpu_check.json` has the same)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = "torch" if device.startswith("cuda") else "onnx"
    where = {"engine": engine, "device": device, "cpu": "Some CPU", "cores": 2}
    path.write_text(json.dumps({"study": "capacity", "capacity": capacity, "where": where, "levels": []}))
    return path


@pytest.fixture
def four(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = study(tmp_path / "four.json", 4)
    monkeypatch.setenv("DEPLOY_CAPACITY_FILE", str(path))
    monkeypatch.delenv("DEPLOY_TARGET_CONCURRENCY", raising=False)
    return path


def test_the_committed_measurement_is_read_as_the_study_wrote_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("DEPLOY_CAPACITY_FILE", raising=False)
    written = json.loads((REPO_ROOT / COMMITTED).read_text())
    capacity = measured_capacity(capacity_file(REPO_ROOT))
    assert capacity.sessions == written["capacity"] >= 1
    assert (capacity.engine, capacity.cores) == (written["where"]["engine"], written["where"]["cores"])


def test_which_measurement_a_named_file_then_this_machines_run_then_the_committed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("DEPLOY_CAPACITY_FILE", raising=False)
    assert capacity_file(tmp_path) == tmp_path / COMMITTED
    study(tmp_path / MEASURED_HERE, 5)
    assert capacity_file(tmp_path) == tmp_path / MEASURED_HERE
    monkeypatch.setenv("DEPLOY_CAPACITY_FILE", str(tmp_path / "elsewhere.json"))
    assert capacity_file(tmp_path) == tmp_path / "elsewhere.json"


def test_a_gpu_instance_prefers_the_gpu_checks_figure_a_cpu_instance_the_capacity_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("DEPLOY_CAPACITY_FILE", raising=False)
    study(tmp_path / MEASURED_HERE, 2)
    assert capacity_file(tmp_path, gpu=True) == tmp_path / MEASURED_HERE, "no GPU figure yet: the CPU's"
    study(tmp_path / GPU_COMMITTED, 40, device="cuda:0")
    assert capacity_file(tmp_path, gpu=True) == tmp_path / GPU_COMMITTED
    study(tmp_path / GPU_MEASURED_HERE, 48, device="cuda:0")
    chosen = measured_capacity(capacity_file(tmp_path, gpu=True))
    assert (chosen.sessions, chosen.on_gpu) == (48, True)
    assert capacity_file(tmp_path, gpu=False) == tmp_path / MEASURED_HERE
    lines = describe(plan(100, "ml.g5.xlarge", chosen.sessions, None), chosen)
    assert "48 gap-free sessions per replica, measured on torch on cuda:0" in lines[0]
    assert "3 x ml.g5.xlarge" in lines[-2] and "a CPU replica's figure" not in "\n".join(lines)


def test_the_autoscaling_target_is_the_measured_capacity_unless_given(four: Path, monkeypatch):
    assert DeployConfig().target_concurrency == 4.0
    assert DeployConfig.from_env().target_concurrency == 4.0
    assert DeployConfig.from_env(target_concurrency=2.5).target_concurrency == 2.5
    monkeypatch.setenv("DEPLOY_TARGET_CONCURRENCY", "6")
    assert DeployConfig.from_env().target_concurrency == 6.0


def test_a_missing_broken_or_empty_measurement_is_a_typed_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="run `python -m benchmarks capacity`"):
        measured_capacity(tmp_path / "none.json")
    (tmp_path / "broken.json").write_text('{"capacity": 3}')
    with pytest.raises(ConfigError, match="not a capacity study's output"):
        measured_capacity(tmp_path / "broken.json")
    with pytest.raises(ConfigError, match="kept no session gap-free"):
        measured_capacity(study(tmp_path / "zero.json", 0))


def test_a_plan_rounds_up_and_prices_what_it_lists():
    result = plan(10, "ml.g5.xlarge", 3.0, None)
    assert (result.instances, result.price_per_hour) == (4, PRICE_PER_HOUR["ml.g5.xlarge"])
    assert result.cost_per_hour == round(4 * PRICE_PER_HOUR["ml.g5.xlarge"], 2)
    assert plan(9, "ml.g5.xlarge", 3.0, None).instances == 3
    assert plan(1, "ml.g5.xlarge", 3.0, None).instances == 1
    unlisted = plan(7, "ml.g6e.xlarge", 2.0, None)
    assert (unlisted.instances, unlisted.cost_per_hour) == (4, None)
    assert "give --price-per-hour" in describe(unlisted, None)[-2]
    assert plan(7, "ml.g6e.xlarge", 2.0, 1.5).cost_per_hour == 6.0
    for bad in ((0, 3.0, None), (5, 0.0, None), (5, 3.0, -1.0)):
        with pytest.raises(ConfigError):
            plan(bad[0], "ml.g5.xlarge", bad[1], bad[2])


def test_a_cpu_figure_for_a_gpu_instance_is_said_to_scale_early(tmp_path: Path):
    result = plan(6, "ml.g5.xlarge", 2.0, None)
    on_cpu = describe(result, measured_capacity(study(tmp_path / "cpu.json", 2)))
    on_gpu = describe(result, measured_capacity(study(tmp_path / "gpu.json", 2, device="cuda:0")))
    assert any("scales early" in line for line in on_cpu)
    assert not any("scales early" in line for line in on_gpu)


def test_the_plan_command_reads_the_measurement(four: Path, capsys: pytest.CaptureFixture[str]):
    assert deploy_main(["plan", "--users", "9", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["sessions_per_instance"], answer["instances"]) == (4.0, 3)
    assert answer["cost_per_hour"] == round(3 * PRICE_PER_HOUR["ml.g5.xlarge"], 2)
    assert answer["capacity"]["source"] == str(four)
    assert deploy_main(["plan", "--users", "9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("capacity: 4 gap-free sessions per replica") and str(four) in lines[0]
    assert "--max-instance-count 3 --target-concurrency 4" in lines[-1]
    assert deploy_main(["plan", "--users", "9", "--target-concurrency", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instances"] == 5
    assert deploy_main(["plan", "--users", "0"]) == 2
    assert "error: --users must be at least 1" in capsys.readouterr().err
