"""The agent's one configuration object. Locally, the variables printed by `python -m emulator env`
are all it needs: the official clients read their endpoints, region and CA from the same variables
they would read on AWS."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from facts import DEFAULT_VOICE, STT_ENDPOINT, TTS_ENDPOINT

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful voice assistant. Your answers are spoken aloud: reply in short, complete sentences, "
    "with no markdown, lists or emoji."
)


def _first_fragment_words(default: int | None) -> int | None:
    """AGENT_FIRST_FRAGMENT_WORDS: a word count, or 0/off for plain sentence chunks."""
    raw = os.environ.get("AGENT_FIRST_FRAGMENT_WORDS", "").strip().lower()
    if not raw:
        return default
    if raw in {"0", "off", "none"}:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"AGENT_FIRST_FRAGMENT_WORDS must be a word count or 'off', got {raw!r}") from exc


@dataclass(frozen=True)
class AgentConfig:
    region: str = "us-east-1"
    tts_endpoint: str = TTS_ENDPOINT
    stt_endpoint: str = STT_ENDPOINT
    """The speech-to-text endpoint a spoken conversation (`/ws`) streams the microphone to."""
    tts_voice: str = DEFAULT_VOICE
    tts_format: str = "pcm"
    bedrock_model_id: str = "global.anthropic.claude-sonnet-4-6"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    sagemaker_http2_endpoint: str | None = None
    ca_bundle: str | None = None
    first_fragment_min_words: int | None = 3
    """The first chunk may end at a clause (", ; :") once it has this many words: on this CPU it cuts
    time to first audio from about 1.7 s to 1.2 s (python -m benchmarks agent). None: sentences only."""
    host: str = "127.0.0.1"
    port: int = 8080

    @property
    def sagemaker_endpoint_uri(self) -> str:
        """The bidirectional-streaming endpoint: the configured one, else AWS's (port 8443)."""
        return self.sagemaker_http2_endpoint or f"https://runtime.sagemaker.{self.region}.amazonaws.com:8443"

    @classmethod
    def from_env(cls, **overrides: object) -> AgentConfig:
        env = os.environ
        config = cls(
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or cls.region,
            tts_endpoint=env.get("AGENT_TTS_ENDPOINT") or cls.tts_endpoint,
            stt_endpoint=env.get("AGENT_STT_ENDPOINT") or cls.stt_endpoint,
            tts_voice=env.get("AGENT_TTS_VOICE") or cls.tts_voice,
            tts_format=env.get("AGENT_TTS_FORMAT") or cls.tts_format,
            bedrock_model_id=env.get("AGENT_BEDROCK_MODEL_ID") or cls.bedrock_model_id,
            system_prompt=env.get("AGENT_SYSTEM_PROMPT") or cls.system_prompt,
            sagemaker_http2_endpoint=env.get("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2")
            or env.get("AWS_ENDPOINT_URL"),
            ca_bundle=env.get("AWS_CA_BUNDLE") or None,
            first_fragment_min_words=_first_fragment_words(cls.first_fragment_min_words),
            host=env.get("AGENT_HOST") or cls.host,
            port=int(env.get("AGENT_PORT") or cls.port),
        )
        return replace(config, **overrides) if overrides else config
