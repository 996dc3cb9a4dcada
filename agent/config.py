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


def _word_count(name: str, default: int | None) -> int | None:
    """A word count from the environment variable `name`, or None for 0/off (the rule is off)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"0", "off", "none"}:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a word count or 'off', got {raw!r}") from exc


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
    first_fragment_max_words: int | None = 8
    """The first chunk ends after this many words even inside a sentence: the local model's long first
    sentences ("The moon is made of solid rock and it's only ... from space!", 33 words) held the first
    audio back 1.7-2.4 s; 8 words are written in about 0.4 s at its 20 words/s and speak for about 3 s,
    while the rest of the sentence is written. None: no such cut."""
    host: str = "127.0.0.1"
    port: int = 8080
    allowed_hosts: tuple[str, ...] = ()
    """Names besides the loopback ones that requests may name in `Host` (AGENT_ALLOWED_HOSTS, comma
    separated; `.example.com` takes its subdomains, `*` any name): host_guard.HostGuard."""

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
            first_fragment_min_words=_word_count("AGENT_FIRST_FRAGMENT_WORDS", cls.first_fragment_min_words),
            first_fragment_max_words=_word_count(
                "AGENT_FIRST_FRAGMENT_MAX_WORDS", cls.first_fragment_max_words
            ),
            host=env.get("AGENT_HOST") or cls.host,
            port=int(env.get("AGENT_PORT") or cls.port),
            allowed_hosts=tuple(env.get("AGENT_ALLOWED_HOSTS", "").split(",")),
        )
        return replace(config, **overrides) if overrides else config
