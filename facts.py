"""The product's shared facts, defined here once and imported wherever they are used: the container
(`tts`), the agent, the deploy, the tools, the benchmarks and the tests. `tests/test_house_facts.py` checks
that no other module assigns one of these names or its value.

Audio leaves the container as Kokoro-82M makes it: 24 kHz mono 16-bit little-endian PCM, or encoded in
one of AUDIO_FORMATS. The endpoints, the agent's runtime, the default voice and the modes are the names
the manifests, the stacks and the clients agree on.
"""

from __future__ import annotations

SAMPLE_RATE = 24_000
"""Kokoro-82M's output rate (the container's `synthesis_start.sample_rate`)."""
CHANNELS = 1
SAMPLE_BYTES = 2  # s16le
PCM_BYTES_PER_S = SAMPLE_RATE * CHANNELS * SAMPLE_BYTES  # 48,000

AUDIO_FORMATS = ("pcm", "wav", "mp3", "aac", "opus", "flac")
"""The formats a client may ask for (tts/wire/encoders.py implements each)."""
MEDIA_TYPES = {
    "pcm": f"audio/pcm;rate={SAMPLE_RATE};channels={CHANNELS}",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "aac": "audio/aac",
    "opus": "audio/ogg;codecs=opus",
    "flac": "audio/flac",
}

DEFAULT_VOICE = "jm_kumo"
"""The shipped voice pack's voice that speaks English well (the PyPI pack has five ja voices)."""
TTS_ENDPOINT = "kokoro-82m"
"""The SageMaker endpoint (and speech model) name: compose/emulator.yaml, the deploy, the agent."""
AGENT_RUNTIME = "voice_agent"
"""The AgentCore runtime the agent runs as (compose/emulator.yaml, the deploy's `VoiceAgent-Runtime`, the
local stack), and the service name of its traces."""

BIDI = "bidi"
BATCH = "batch"
MODES = (BIDI, BATCH)
"""How the agent speaks an answer: each sentence as the model writes it, or the whole answer at once."""

METRICS_NAMESPACE = "VoiceAgent"
"""The CloudWatch namespace of the product's own metrics (EMF lines on the containers' stdout), with the
dimension `Service` (`tts`, `agent`); the stacks' alarms and dashboard and the emulator read them."""
FIRST_AUDIO_METRIC = "TimeToFirstAudio"
"""Milliseconds from a request reaching the container (tts) or a turn's text (agent) to its first audio."""
STALLS_METRIC = "Stalls"
OVER_CAPACITY_METRIC = "SessionsOverCapacity"
"""Sessions with audio to compute beyond the capacity `/ping` claims (0 when within it)."""
ERRORS_METRIC = "Errors"
STT_SAMPLE_RATE = 16_000
"""What the speech-to-text container hears: 16 kHz mono s16le PCM, the rate Whisper and Silero VAD run at."""
STT_PCM_BYTES_PER_S = STT_SAMPLE_RATE * CHANNELS * SAMPLE_BYTES  # 32,000
STT_ENDPOINT = "whisper-stt"
"""The speech-to-text SageMaker endpoint (compose/listen.yaml, the clients)."""
