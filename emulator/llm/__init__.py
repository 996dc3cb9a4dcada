"""The reply models behind the emulated Bedrock (not an AWS service: what answers its Converse), and the
choice between them.

- `base.py`: the interface (`ReplyModel`), the request it answers (`ConverseRequest`), its typed
  refusals and failures (`PromptTooLong`, `ReplyModelError`), which the Bedrock service maps to Bedrock's
  errors; this room imports no wire code.
- `smollm/`: SmolLM2-135M-Instruct, the default: a real model that answers the question asked, streaming
  each token as it is decoded (`weights.py` prepares it once; `model.py` runs it as float32 on
  transformers + torch, `genai.py` on onnxruntime-genai with the GGUF's own 4-bit blocks,
  `gguf_blocks.py`, so both give the same answers). `smollm2` is onnxruntime-genai where it is installed
  (3x torch's tokens per second on one thread), else torch; `smollm2-onnx` and `smollm2-torch` name one.
  `threads.py`: the model's thread budget, from the core count.
- `script.py`: the paced script model, deterministic replies at a hosted model's pace.
- `openai_compatible.py`: any OpenAI-compatible chat completions server (llama.cpp, vLLM, Ollama).

All answer in text only: a request's `toolConfig` is accepted and ignored (no tool calls), which is
enough for a voice agent that has no tools and keeps Strands' tool-enabled requests working.

This module is the only one that imports the implementations, each inside the branch that chooses it,
so torch, transformers and onnxruntime-genai load only when SmolLM2 is chosen.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from emulator.config import ConfigError
from emulator.llm.base import ReplyModel

BACKENDS = ("smollm2", "smollm2-onnx", "smollm2-torch", "script")


def smollm2_runtime(backend: str) -> str:
    """`smollm2-onnx` or `smollm2-torch` for a SmolLM2 backend name: `smollm2` is onnxruntime-genai where
    it is installed, else torch (see above)."""
    if backend != "smollm2":
        return backend
    return "smollm2-onnx" if importlib.util.find_spec("onnxruntime_genai") else "smollm2-torch"


def reply_model_from_config(config: Any) -> ReplyModel:
    """The model the emulator config asks for (`config` needs the `llm_*` fields of `EmulatorConfig`): the
    OpenAI-compatible server when a URL is set, else `llm_backend`: SmolLM2 (the default) or the script.
    SmolLM2's threads: `llm_threads`, or where it is 0 the budget `threads.py` derives from the cores."""
    if config.llm_openai_base_url:
        from emulator.llm.openai_compatible import OpenAICompatibleModel

        return OpenAICompatibleModel(config.llm_openai_base_url, model=config.llm_openai_model)
    backend = smollm2_runtime(config.llm_backend)
    if backend in {"smollm2-onnx", "smollm2-torch"}:
        from emulator.llm.smollm.genai import SmolLM2GenaiModel
        from emulator.llm.smollm.model import SmolLM2Model
        from emulator.llm.threads import thread_budget

        model = SmolLM2GenaiModel if backend == "smollm2-onnx" else SmolLM2Model
        threads = thread_budget(config.llm_threads, own_process=model.OWN_PROCESS)
        return model(config.llm_cache_dir, threads, config.llm_max_tokens)
    if config.llm_backend != "script":
        raise ConfigError(
            f"EMULATOR_LLM_BACKEND must be one of {', '.join(BACKENDS)}, got {config.llm_backend!r}"
        )
    from emulator.llm.script import PacedScriptModel, load_script

    script = load_script(config.llm_script) if config.llm_script else None
    return PacedScriptModel(config.llm_first_token_ms, config.llm_tokens_per_s, script)
