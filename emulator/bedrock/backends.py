"""Which reply model answers the Bedrock face: the one the emulator config names."""

from __future__ import annotations

from typing import Any

from emulator.bedrock.models import OpenAICompatibleModel, PacedScriptModel, ReplyModel, load_script
from emulator.bedrock.smollm import SmolLM2Model
from emulator.config import ConfigError

BACKENDS = ("smollm2", "script")


def reply_model_from_config(config: Any) -> ReplyModel:
    """The backend the emulator config asks for: the OpenAI-compatible server when a URL is set,
    else `llm_backend`: SmolLM2 on transformers (the default) or the paced script."""
    if config.llm_openai_base_url:
        return OpenAICompatibleModel(config.llm_openai_base_url, model=config.llm_openai_model)
    if config.llm_backend == "smollm2":
        return SmolLM2Model(config.llm_cache_dir, config.llm_threads, config.llm_max_tokens)
    if config.llm_backend != "script":
        raise ConfigError(
            f"EMULATOR_LLM_BACKEND must be one of {', '.join(BACKENDS)}, got {config.llm_backend!r}"
        )
    script = load_script(config.llm_script) if config.llm_script else None
    return PacedScriptModel(config.llm_first_token_ms, config.llm_tokens_per_s, script)
