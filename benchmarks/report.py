"""What every study shares: the machine description, the table printer, the JSON + PNG writer, the
plot style (matplotlib on the Agg backend: no display needed) and the progress bar (tqdm on stderr)."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # after matplotlib.use: the backend is chosen first
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy._core._multiarray_umath import __cpu_features__ as cpu_features
from tqdm import tqdm

OURS = "#0a84ff"
ARTICLE = "#8e8e93"
SECOND = "#ff9f0a"
TARGET = "#d70015"


def processor() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what `platform` knows of it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def vector_extensions() -> str:
    """The vector extensions this process's CPUID shows, the ones that pick onnxruntime's and torch's
    kernels (numpy reads them the same way). Under scripts/avx2-only: AVX2+FMA3 on any CPU."""
    names = ("AVX2", "FMA3", "AVX512F", "AVX512VNNI")
    return "+".join(name for name in names if cpu_features.get(name)) or "none"


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": processor(),
        "vector_extensions": vector_extensions(),
        "python": platform.python_version(),
        "load_average_1_5_15_min": [round(v, 2) for v in os.getloadavg()],  # > cpus: a busy machine
    }


def progress[T](items: Iterable[T], description: str, total: int | None = None) -> Iterable[T]:
    """A progress bar on stderr (the table goes to stdout)."""
    return tqdm(items, desc=description, total=total, file=sys.stderr, leave=False, dynamic_ncols=True)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain text table: first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(parts))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)


def figure(title: str, columns: int = 1, width: float = 6.5) -> tuple[Figure, list[Axes]]:
    fig, axes = plt.subplots(1, columns, figsize=(width * columns, 4.4), squeeze=False)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    return fig, list(axes[0])


def reference_line(ax: Axes, value: float, label: str, horizontal: bool = True, color: str = ARTICLE) -> None:
    """A published figure (dashed grey) or a target (another `color`) drawn beside our measurement."""
    draw = ax.axhline if horizontal else ax.axvline
    draw(value, color=color, linestyle="--", linewidth=1.2, label=label)


def label_bars(ax: Axes, bars: Any, fmt: str = "{:.0f}", *, horizontal: bool = False) -> None:
    """Each bar's value at its end: above a vertical bar (`bar`), right of a horizontal one (`barh`)."""
    for bar in bars:
        value = bar.get_width() if horizontal else bar.get_height()
        ax.annotate(
            fmt.format(value),
            (value, bar.get_y() + bar.get_height() / 2)
            if horizontal
            else (bar.get_x() + bar.get_width() / 2, value),
            ha="left" if horizontal else "center",
            va="center" if horizontal else "bottom",
            fontsize=8,
            xytext=(3, 0) if horizontal else (0, 2),
            textcoords="offset points",
        )


def session_bars(
    ax: Axes,
    rows: Sequence[dict[str, Any]],
    values: Sequence[float],
    title: str,
    unit: str,
    fmt: str = "{:.0f}",
) -> None:
    """One labelled bar per row of a concurrent-sessions sweep (`row["sessions"]` on the x axis)."""
    bars = ax.bar([str(row["sessions"]) for row in rows], values, color=OURS)
    label_bars(ax, bars, fmt)
    ax.set(title=title, xlabel="concurrent sessions", ylabel=unit)


def skipped(study: str, reason: str) -> dict[str, Any]:
    """A study this machine cannot run: says why, writes nothing."""
    print(f"skipping: {reason}")
    return {"study": study, "skipped": reason}


def write(out: Path, study: str, result: dict[str, Any], fig: Figure, quick: bool) -> dict[str, Any]:
    """`out/<study>.json` (the result plus the machine and the mode) and `out/<study>.png`."""
    out.mkdir(parents=True, exist_ok=True)
    report = {"study": study, "quick": quick, "machine": machine(), **result}
    (out / f"{study}.json").write_text(json.dumps(report, indent=2) + "\n")
    save_figure(out, study, fig, quick)
    print(f"wrote {out / f'{study}.json'} and {out / f'{study}.png'}")
    return report


def save_figure(out: Path, study: str, fig: Figure, quick: bool) -> None:
    """`out/<study>.png`, footed with the run's mode and machine."""
    fig.text(
        0.99,
        0.01,
        f"{'--quick run, ' if quick else ''}{os.cpu_count()} CPUs, {platform.machine()}",
        ha="right",
        va="bottom",
        fontsize=7,
        color=ARTICLE,
    )
    fig.tight_layout()
    fig.savefig(out / f"{study}.png", dpi=110)
    plt.close(fig)
