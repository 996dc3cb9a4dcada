"""The GPU study draws its sessions."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image

from benchmarks import gpu, report


def _times(first: float) -> dict[str, float]:
    return {"median": first, "min": first, "max": first}


def test_the_gpu_study_draws_its_sessions(tmp_path: Path) -> None:
    engine = {"engine": "torch", "device": "cuda (NVIDIA H200)", "load_s": 4.1, "rtf": _times(0.01)}
    result = {
        "engines": [engine],
        "sessions": [
            {"sessions": n, "aggregate_rtf": 0.01 * n, "first_audio_s": _times(0.05)} for n in (1, 4, 16)
        ],
    }
    report.save_figure(tmp_path, "gpu", gpu.plot(result), quick=False)
    image = matplotlib.image.imread(tmp_path / "gpu.png")
    assert image.shape[0] > 300 and image.shape[1] > 600, "a readable figure"
