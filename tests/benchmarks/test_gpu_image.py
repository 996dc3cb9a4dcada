"""The GPU image study counts the sessions that held real time, and draws them."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image

from benchmarks import gpu_image, report


def _times(first: float) -> dict[str, float]:
    return {"median": first, "min": first, "max": first}


def test_the_gpu_image_study_counts_the_sessions_that_held_real_time_and_draws_them(tmp_path: Path) -> None:
    rows = [
        {"sessions": n, "first_audio_s": _times(0.05 * n), "max_stall_s": stall}
        for n, stall in ((1, 0.0), (2, 0.01), (4, 0.05), (8, 0.3))
    ]
    assert gpu_image.real_time_sessions(rows) == 4  # 50 ms is still real time, 300 ms is not
    assert gpu_image.real_time_sessions(rows[3:]) == 0
    result = {"gpu": "NVIDIA A10G, 550.127", "rtf": _times(0.02), "vram_mib": {"peak": 1800}}
    result |= {"sessions": rows, "real_time_sessions": 4}
    report.save_figure(tmp_path, "gpu_image", gpu_image.plot(result), quick=False)
    assert matplotlib.image.imread(tmp_path / "gpu_image.png").shape[1] > 600
