"""The GPU check as a folder that runs on a lent GPU machine with no package index
(`scripts/gpu-check --bundle DIR`, then `DIR/run [--device cuda|cpu] --out OUT [--quick]`).

That machine (/work/.library/device/KINDS.md) has Python 3.12 with torch (CUDA), transformers,
huggingface_hub, numpy, scipy, onnx, matplotlib and tqdm, no espeak-ng, no package
index, and takes at most 64 MiB of files per run. So `build` writes, well under BUNDLE_LIMIT:
- `code/`: the project's code the check runs (`facts.py`, `tts/`, and the studies it uses), copied;
- `site/`: the pure-Python packages the torch engine imports that the machine lacks (CARRIED: kokoro,
  for its modules, and loguru, which they log through), copied from this environment;
- `assets.json`: the phoneme vocabulary, every text the check speaks already phonemized (espeak-ng
  here; there, a lookup: `PhonemizedTexts`), and two real voices;
- `run`: the entry point.
Weights: hexgrad's architecture with seeded random weights (`random_layout`: 0 bytes to carry against
the 92 MB int8 model or 330 MB of float weights), written on the machine into hexgrad's layout and
loaded by the engine's own strict loader; a real layout can be given instead (`--model-dir`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

BUNDLE_LIMIT = 60 * 1024 * 1024
# The distributions the torch engine and the check import that the lent machines' image lacks (its list:
# KINDS.md, "Python packages already there"; tests/benchmarks/test_gpu_bundle.py runs the bundle with
# that list alone).
CARRIED = ("kokoro", "loguru")
CODE = ("facts.py", "tts", "benchmarks/__init__.py", "benchmarks/report.py", "benchmarks/texts.py",
        "benchmarks/batching.py", "benchmarks/gpu_bundle.py")  # fmt: skip
SEED = 20251
# Random weights predict about 25 frames per phoneme token (50 sigmoid outputs near 0.5 summed); the
# real model about 4.4 (measured on the check's sentences). The duration head is scaled so the random
# model's sentences last as long as real ones: the decoder's work is per frame.
DURATION_BIAS = -2.4
DURATION_WEIGHT_SCALE = 0.1
RUN_SCRIPT = """#!/usr/bin/env bash
# The GPU check, offline: {bundle}/run [--device cuda|cpu] --out OUT [--quick] [--model-dir DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export PYTHONPATH="$here/code:$here/site${{PYTHONPATH:+:$PYTHONPATH}}" PYTHONUNBUFFERED=1
exec ${{PYTHON:-python3}} -m benchmarks.gpu_bundle run "$here" "$@"
"""


class PhonemizedTexts:
    """The engine's phonemizer where espeak-ng is not: the phonemes `build` wrote for each text."""

    def __init__(self, phonemes: dict[str, str]) -> None:
        self._phonemes = phonemes
        self.languages = {"en-us"}

    def phonemize(self, text: str, lang: str) -> str:
        try:
            return self._phonemes[text]
        except KeyError:
            raise KeyError(f"the bundle has no phonemes for {text!r}; rebuild it with this text") from None


def spoken_texts() -> list[str]:
    """Every text the check hands the engine's phonemizer: the studies' sentences (as speech text),
    the calibration's and the warm-up's."""
    from benchmarks.batching import FIRST_AUDIO_TEXT, QUICK_TEXT, SESSION_TEXTS
    from tts.engines.base import WARMUP_TEXT
    from tts.scheduling.calibration import SHORT_TEXT
    from tts.scheduling.speed import SPEED_TEXT
    from tts.text.speech_text import speech_text

    texts = [FIRST_AUDIO_TEXT, *SESSION_TEXTS, QUICK_TEXT, WARMUP_TEXT, SHORT_TEXT, SPEED_TEXT]
    return sorted({speech_text(text) for text in texts} | set(texts))


def build(dest: Path, root: Path) -> dict[str, Any]:
    """Write the bundle into `dest` from the repository at `root`; refuses past BUNDLE_LIMIT."""
    from benchmarks.batching import SPEAKERS
    from tts.config import TTSConfig
    from tts.engines.weights import pypi_vocab, shipped_voices
    from tts.text.g2p import Phonemizer

    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "Dockerfile*", "requirements*", "README.md")
    for name in CODE:
        source, target = root / name, dest / "code" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore)
        else:
            shutil.copy2(source, target)
    for package in CARRIED:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(
                f"{package} is not installed here (pip install -e '.[torch]'): the bundle carries it"
            )
        shutil.copytree(spec.submodule_search_locations[0], dest / "site" / package, ignore=ignore)
    phonemizer = Phonemizer()
    voices = shipped_voices(TTSConfig().cache_dir)
    assets = {
        "vocab": pypi_vocab(),
        "phonemes": {text: phonemizer.phonemize(text, "en-us") for text in spoken_texts()},
        "voices": {name: voices[name].round(6).tolist() for name in SPEAKERS},
    }
    (dest / "assets.json").write_text(json.dumps(assets), encoding="utf-8")
    run = dest / "run"
    run.write_text(RUN_SCRIPT.format(bundle=dest.name))
    run.chmod(0o755)
    size = sum(path.stat().st_size for path in dest.rglob("*") if path.is_file())
    if size > BUNDLE_LIMIT:
        raise RuntimeError(f"the bundle is {size / 2**20:.1f} MiB, over {BUNDLE_LIMIT / 2**20:.0f} MiB")
    return {"path": str(dest), "mib": round(size / 2**20, 2), "carried": list(CARRIED)}


def random_layout(dest: Path, vocab: dict[str, int], voices: dict[str, np.ndarray], seed: int = SEED) -> Path:
    """hexgrad's layout with kokoro's own random initialisation under `seed`, its duration head scaled
    to real sentence lengths (DURATION_BIAS), and `voices`: what the engine loads like the real one."""
    import torch

    from tts.engines.torch.export import kokoro_config
    from tts.engines.torch.kmodel import COMPONENTS, CONFIG_FILE, MODEL_FILE, VOICES_DIR, build_kmodel

    torch.manual_seed(seed)
    config = kokoro_config(vocab)
    model = build_kmodel(config)
    with torch.no_grad():
        head = model.predictor.duration_proj.linear_layer
        head.weight.mul_(DURATION_WEIGHT_SCALE)
        head.bias.fill_(DURATION_BIAS)
    (dest / VOICES_DIR).mkdir(parents=True, exist_ok=True)
    (dest / CONFIG_FILE).write_text(json.dumps(config), encoding="utf-8")
    torch.save({c: getattr(model, c).state_dict() for c in COMPONENTS}, dest / MODEL_FILE)
    for name, pack in voices.items():
        torch.save(
            torch.from_numpy(np.asarray(pack, np.float32).reshape(-1, 1, 256)),
            dest / VOICES_DIR / f"{name}.pt",
        )
    return dest


def log_spectral_distance(a: np.ndarray, b: np.ndarray, n_fft: int = 1024, hop: int = 256) -> float:
    """Mean absolute difference of two clips' log magnitude spectra (natural log, 1e-5 floor)."""
    length = min(len(a), len(b))
    window = np.hanning(n_fft)

    def spectrum(x: np.ndarray) -> np.ndarray:
        frames = np.lib.stride_tricks.sliding_window_view(x[:length], n_fft)[::hop] * window
        return np.log(np.abs(np.fft.rfft(frames, axis=-1)) + 1e-5)

    return float(np.mean(np.abs(spectrum(a) - spectrum(b))))


def gpu_against_cpu(gpu_engine, layout: Path, config, phonemes: dict[str, str]) -> dict[str, Any]:
    """The same windows on the GPU and on the CPU, same weights: log-spectral distance and peak error."""
    from benchmarks.batching import SESSION_TEXTS, SPEAKERS, windows_of
    from tts.engines.torch.engine import TorchEngine

    cpu_engine = TorchEngine(replace(config, provider="cpu"), layout)
    cpu_engine.phonemizer = PhonemizedTexts(phonemes)
    rows = []
    for engine in (gpu_engine, cpu_engine):
        features = [
            engine.features(engine.segments(text, "en-us")[0], SPEAKERS[0], 1.0) for text in SESSION_TEXTS
        ]
        rows.append([engine.decode(w.features, w.start, w.stop) for w in windows_of(features, 4, [40, 64])])
    distances = [log_spectral_distance(g, c) for g, c in zip(*rows, strict=True)]
    return {
        "windows": len(distances),
        "log_spectral_distance_max": round(max(distances), 4),
        "max_abs": float(max(np.abs(g[: len(c)] - c[: len(g)]).max() for g, c in zip(*rows, strict=True))),
        "frames_equal": all(len(g) == len(c) for g, c in zip(*rows, strict=True)),
    }


def run(bundle: Path, argv: list[str]) -> int:
    """`DIR/run`: the batching study on `--device`, its JSON and plot under `--out`, one summary line."""
    parser = argparse.ArgumentParser(prog=f"{bundle}/run", description="the GPU check, offline")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="two sessions at most, one trial (CI's dry run)")
    parser.add_argument("--model-dir", type=Path, help="hexgrad's layout to load instead of random weights")
    args = parser.parse_args(argv)
    import torch

    from benchmarks import batching, report

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: torch sees no CUDA device here; run with --device cpu for the dry run")
        return 2
    assets = json.loads((bundle / "assets.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="gpu-check-weights-") as scratch:
        layout = args.model_dir or random_layout(Path(scratch), assets["vocab"], assets["voices"])
        result = _measure(args, layout, assets)
    print(batching.table(result))
    report.write(args.out, "gpu_check", result, batching.plot(result), args.quick)
    print(batching.verdict(result))
    return 0 if result["equivalence"]["within"] else 1


def _measure(args: argparse.Namespace, layout: Path, assets: dict[str, Any]) -> dict[str, Any]:
    import torch

    from benchmarks import batching, report
    from tts.config import TTSConfig
    from tts.engines.torch.engine import TorchEngine

    config = TTSConfig(engine="torch", provider=args.device, voice=batching.SPEAKERS[0])
    engine = TorchEngine(config, layout)
    engine.phonemizer = PhonemizedTexts(assets["phonemes"])
    extra: dict[str, Any] = {"machine": report.machine(), "torch": torch.__version__}
    if args.device == "cuda":
        extra["gpu"] = torch.cuda.get_device_name(0)
        extra["gpu_against_cpu"] = gpu_against_cpu(engine, layout, config, assets["phonemes"])
    weights = "given" if args.model_dir else f"random (seed {SEED})"
    return batching.measure(engine, config, args.quick, weights, extra)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "run":
        return run(Path(argv[1]), argv[2:])
    if len(argv) == 2 and argv[0] == "build":
        print(json.dumps(build(Path(argv[1]), Path(__file__).resolve().parents[1])))
        return 0
    print(
        "usage: python -m benchmarks.gpu_bundle build DIR | run DIR [--device cuda|cpu] --out OUT",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
