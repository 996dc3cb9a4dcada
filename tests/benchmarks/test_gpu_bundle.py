"""The GPU check's bundle (`scripts/gpu-check --bundle DIR`, `benchmarks/gpu_bundle.py`): it builds under
its size limit, and its `run` passes here on the CPU (`--device cpu --quick`) with only the packages
the lent GPU machines have (KINDS.md's list), no espeak-ng and no package index, and writes its JSON.
So the bundle cannot rot between the sessions that have a GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement

from benchmarks.gpu_bundle import BUNDLE_LIMIT, CARRIED, PhonemizedTexts

ROOT = Path(__file__).resolve().parents[2]
# /work/.library/device/KINDS.md, "Python packages already there" (nvidia-h100-x1, nvidia-h200), read
# on 2026-11-17. Local CUDA 12 builds of torch bring nvidia-*-cu12 and cuda-* packages of their own,
# which stand in for the machine's CUDA 13 ones (`_on_machine`).
MACHINE_DISTRIBUTIONS = set(
    [
        "absl-py",
        "accelerate",
        "aiofiles",
        "aiohappyeyeballs",
        "aiohttp",
        "aiosignal",
        "annotated-doc",
        "anyio",
        "attrs",
        "botorch",
        "build",
        "certifi",
        "charset-normalizer",
        "chex",
        "click",
        "cloudpickle",
        "cmake",
        "colorama",
        "contourpy",
        "coverage",
        "cuda-bindings",
        "cuda-core",
        "cuda-pathfinder",
        "cuda-toolkit",
        "cupy-cuda13x",
        "cycler",
        "cython",
        "diffrax",
        "e3nn",
        "einops",
        "equinox",
        "etils",
        "execnet",
        "filelock",
        "flatbuffers",
        "flax",
        "fonttools",
        "formulaic",
        "frozenlist",
        "fsspec",
        "gpytorch",
        "grpcio",
        "h11",
        "h5py",
        "hf-xet",
        "httpcore",
        "httpx",
        "huggingface-hub",
        "humanize",
        "hypothesis",
        "idna",
        "imageio",
        "iniconfig",
        "interface-meta",
        "jax",
        "jax-cuda13-pjrt",
        "jax-cuda13-plugin",
        "jaxlib",
        "jaxtyping",
        "jinja2",
        "joblib",
        "kiwisolver",
        "lazy-loader",
        "lightning",
        "lightning-utilities",
        "linear-operator",
        "lineax",
        "llvmlite",
        "lxml",
        "markdown",
        "markdown-it-py",
        "markupsafe",
        "matplotlib",
        "mdurl",
        "meson",
        "ml-dtypes",
        "mpi4py",
        "mpmath",
        "msgpack",
        "multidict",
        "multipledispatch",
        "mypy-extensions",
        "nanobind",
        "narwhals",
        "networkx",
        "ninja",
        "numba",
        "numba-cuda",
        "numpy",
        "numpyro",
        "nvidia-ml-py",
        "onnx",
        "onnx-ir",
        "onnxruntime",
        "onnxscript",
        "opencv-python-headless",
        "optax",
        "opt-einsum",
        "opt-einsum-fx",
        "optimistix",
        "orbax-checkpoint",
        "packaging",
        "pandas",
        "pathspec",
        "patsy",
        "peft",
        "pillow",
        "pip",
        "pluggy",
        "portalocker",
        "prometheus-client",
        "propcache",
        "protobuf",
        "psutil",
        "pyarrow",
        "pybind11",
        "py-cpuinfo",
        "pygments",
        "pyparsing",
        "pyproject-hooks",
        "pyre-extensions",
        "pytest",
        "pytest-benchmark",
        "pytest-cov",
        "pytest-mock",
        "pytest-timeout",
        "pytest-xdist",
        "python-dateutil",
        "pytorch-lightning",
        "pyyaml",
        "regex",
        "requests",
        "rich",
        "sacrebleu",
        "safetensors",
        "scikit-build-core",
        "scikit-image",
        "scikit-learn",
        "scipy",
        "seaborn",
        "sentencepiece",
        "sentence-transformers",
        "setuptools",
        "shellingham",
        "simplejson",
        "six",
        "sortedcontainers",
        "statsmodels",
        "sympy",
        "tabulate",
        "tensorboard",
        "tensorboard-data-server",
        "tensorstore",
        "threadpoolctl",
        "tifffile",
        "tiktoken",
        "timm",
        "tokenizers",
        "toolz",
        "torch",
        "torchaudio",
        "torchdiffeq",
        "torch-geometric",
        "torchmetrics",
        "torchvision",
        "tqdm",
        "transformers",
        "treescope",
        "triton",
        "typer",
        "typing-extensions",
        "typing-inspect",
        "urllib3",
        "uvloop",
        "wadler-lindig",
        "werkzeug",
        "wheel",
        "wrapt",
        "xarray",
        "xxhash",
        "yarl",
        "zipp",
    ]
)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _with_requirements(names: set[str]) -> set[str]:
    """`names` and what their versions installed here require (not their extras), transitively: this
    environment's versions of the machine's packages may need other packages than the machine's do."""
    found, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        todo += [_normal(Requirement(r).name) for r in requires if "extra ==" not in r]
    return found


ON_MACHINE = _with_requirements(MACHINE_DISTRIBUTIONS)


def _on_machine(distribution: str) -> bool:
    name = _normal(distribution)
    return name in ON_MACHINE or name.startswith(("nvidia-", "cuda-"))


@pytest.fixture(scope="module")
def machine_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages holding only what the lent machines have: links to this environment's copies of
    the distributions on their list (their modules, metadata and bundled libraries)."""
    here = Path(torch.__file__).resolve().parents[1]
    site = tmp_path_factory.mktemp("machine-site")
    owners = packages_distributions()
    for entry in here.iterdir():
        name = entry.name
        if name.endswith((".dist-info", ".egg-info")):
            keep = _on_machine(name.split("-")[0])
        elif name.endswith(".libs"):
            keep = _on_machine(name.removesuffix(".libs").removeprefix("."))
        else:
            module = name.removesuffix(".py").split(".")[0]
            keep = any(_on_machine(d) for d in owners.get(module, ())) and not name.endswith(".pth")
        if keep:
            (site / name).symlink_to(entry)
    return site


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("bundle") / "gpu-check"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [str(ROOT / "scripts" / "gpu-check"), "--bundle", str(dest)], check=True, cwd=ROOT, env=env
    )
    return dest


def test_the_bundle_is_under_its_limit_and_carries_what_the_machine_lacks(bundle: Path):
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < BUNDLE_LIMIT
    assert os.access(bundle / "run", os.X_OK)
    assert {p.name for p in (bundle / "site").iterdir()} == set(CARRIED)
    assert not any(_on_machine(package) for package in CARRIED)
    assets = json.loads((bundle / "assets.json").read_text())
    assert assets["phonemes"] and all(assets["phonemes"].values())


def test_a_text_the_bundle_did_not_phonemize_is_named_in_the_error():
    with pytest.raises(KeyError, match="no phonemes for 'Hello'"):
        PhonemizedTexts({"Hi.": "hˈaɪ."}).phonemize("Hello", "en-us")


# slow: the GPU run's dry run on the CPU (20 s), from a bundle the test above checks.
@pytest.mark.slow
def test_the_bundle_runs_on_the_cpu_with_only_the_machines_packages(
    bundle: Path, machine_site: Path, tmp_path
):
    """`DIR/run --device cpu --quick` as the lent machine would run it: `python -S` (no site-packages,
    so neither this repository's editable install nor espeak-ng, kokoro or loguru from here), with the
    machine's packages alone on its path."""
    out = tmp_path / "out"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHON": f"{sys.executable} -S",
        "PYTHONPATH": str(machine_site),
        "OMP_NUM_THREADS": "2",
    }
    done = subprocess.run(
        [str(bundle / "run"), "--device", "cpu", "--out", str(out), "--quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("batching on cpu (random (seed") and "batched equivalent" in summary, summary
    result = json.loads((out / "gpu_check.json").read_text())
    assert result["equivalence"]["within"] and result["equivalence"]["finite"]
    assert [r["sessions"] for r in result["sessions"]["batched"]] == [1, 2]
    assert all(r["audio_s_per_s"] > 0 for r in result["sessions"]["unbatched"])
    # the engine's passes through the scheduler, counted (shared by sessions only batched, and with a
    # calibration, which --quick skips)
    assert all(r["shared_passes"] == 0 and r["passes"] > 0 for r in result["sessions"]["unbatched"])
    assert (out / "gpu_check.png").stat().st_size > 0
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json", "gpu_check.png"]
