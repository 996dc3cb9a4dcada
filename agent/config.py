"""The agent's one configuration object. Locally, the variables printed by `python -m emulator env`
are all it needs: the official clients read their endpoints, region and CA from the same variables
they would read on AWS."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from facts import DEFAULT_VOICE, STT_ENDPOINT, TTS_ENDPOINT

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful voice assistant. Your answers are spoken aloud: reply in short, complete sentences, "
    "with no markdown, lists or emoji."
)


BACKCHANNELS = (
    "mm-hmm",
    "mm-hm",
    "mhm",
    "mhmm",
    "mm",
    "mmm",
    "hm",
    "hmm",
    "uh-huh",
    "uh huh",
    "yeah",
    "yep",
    "yes",
    "right",
    "okay",
    "ok",
    "sure",
    "i see",
    "got it",
    "alright",
    "all right",
    "oh",
    "ah",
    "wow",
    "cool",
    "thanks",
    "thank you",
)
"""Said to keep the other talking, not to take the turn (agent.turn_taking; AGENT_BACKCHANNELS
replaces the list)."""


def _off_or[T](raw: str | None, default: T | None, parse: Callable[[str], T]) -> T | None:
    """A setting that `off` (or 0/none) turns off; unset or empty: `default`."""
    raw = (raw or "").strip()
    if not raw:
        return default
    if raw.lower() in {"0", "off", "none"}:
        return None
    return parse(raw)


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
    first_fragment_max_words: int | None = 5
    """The first chunk ends after this many words even inside a sentence: the local model's long first
    sentences ("The moon is made of solid rock and it's only ... from space!", 33 words) held the first
    audio back 1.7-2.4 s. 5 words are written in about 0.25 s at its 20 words/s (8, the earlier
    default, 0.4 s: the first audio waited 0.15 s more for words, #47) and speak for about 1.8 s, while
    the rest of the sentence is written. None: no such cut."""
    backchannels: tuple[str, ...] | None = BACKCHANNELS
    """Over a spoken answer, an utterance of only these (two at most) or of no words at all (a cough) lets
    the answer resume where it paused (agent.turn_taking). None (AGENT_BACKCHANNELS=off): any voice
    interrupts the answer the moment it is heard."""
    preempt_complete: float | None = 0.2
    """A spoken turn starts on a pause's transcript once the speech-to-text turn model gives it this
    probability of being finished (its own cut, 0.5, ends the turn); the answer's events are held until
    the final says the same words. None (AGENT_PREEMPT_COMPLETE=off): turns start on the final."""
    host: str = "127.0.0.1"
    port: int = 8080
    allowed_hosts: tuple[str, ...] = ()
    """Names besides the loopback ones that requests may name in `Host` (AGENT_ALLOWED_HOSTS, comma
    separated; `.example.com` takes its subdomains, `*` any name): host_guard.HostGuard."""

    def __post_init__(self) -> None:
        if self.preempt_complete is not None and not 0.0 < self.preempt_complete < 1.0:
            shown = self.preempt_complete
            raise ValueError(f"AGENT_PREEMPT_COMPLETE must be between 0 and 1 or off, got {shown}")

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
            backchannels=_off_or(
                env.get("AGENT_BACKCHANNELS"),
                cls.backchannels,
                lambda raw: tuple(p.strip().lower() for p in raw.split(",") if p.strip()),
            ),
            preempt_complete=_off_or(env.get("AGENT_PREEMPT_COMPLETE"), cls.preempt_complete, float),
            host=env.get("AGENT_HOST") or cls.host,
            port=int(env.get("AGENT_PORT") or cls.port),
            allowed_hosts=tuple(env.get("AGENT_ALLOWED_HOSTS", "").split(",")),
        )
        return replace(config, **overrides) if overrides else config
