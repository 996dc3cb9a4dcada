"""The reply models behind the emulated Bedrock (not an AWS service: what answers its Converse), and the
choice between them.

- `base.py`: the interface (`ReplyModel`), the request it answers (`ConverseRequest`), its typed
  refusals and failures (`PromptTooLong`, `ReplyModelError`), which the Bedrock service maps to Bedrock's
  errors; this room imports no wire code.
- `smollm/`: SmolLM2-135M-Instruct on transformers + torch (CPU), the default: a real model that answers
  the question asked, streaming each token as it is decoded (`weights.py` prepares it once, `model.py`
  runs it).
- `script.py`: the paced script model, deterministic replies at a hosted model's pace.
- `openai_compatible.py`: any OpenAI-compatible chat completions server (llama.cpp, vLLM, Ollama).

All answer in text only: a request's `toolConfig` is accepted and ignored (no tool calls), which is
enough for a voice agent that has no tools and keeps Strands' tool-enabled requests working.

This module is the only one that imports the implementations, each inside the branch that chooses it,
so torch and transformers load only when SmolLM2 is chosen.
"""

from __future__ import annotations

from typing import Any

from emulator.config import ConfigError
from emulator.llm.base import ReplyModel

BACKENDS = ("smollm2", "script")


def reply_model_from_config(config: Any) -> ReplyModel:
    """The model the emulator config asks for (`config` needs the `llm_*` fields of `EmulatorConfig`): the
    OpenAI-compatible server when a URL is set, else `llm_backend`: SmolLM2 (the default) or the script."""
    if config.llm_openai_base_url:
        from emulator.llm.openai_compatible import OpenAICompatibleModel

        return OpenAICompatibleModel(config.llm_openai_base_url, model=config.llm_openai_model)
    if config.llm_backend == "smollm2":
        from emulator.llm.smollm.model import SmolLM2Model

        return SmolLM2Model(config.llm_cache_dir, config.llm_threads, config.llm_max_tokens)
    if config.llm_backend != "script":
        raise ConfigError(
            f"EMULATOR_LLM_BACKEND must be one of {', '.join(BACKENDS)}, got {config.llm_backend!r}"
        )
    from emulator.llm.script import PacedScriptModel, load_script

    script = load_script(config.llm_script) if config.llm_script else None
    return PacedScriptModel(config.llm_first_token_ms, config.llm_tokens_per_s, script)
