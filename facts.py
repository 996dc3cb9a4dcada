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

VOICES = (
    *(f"af_{n}" for n in ("alloy", "aoede", "bella", "heart", "jessica", "kore", "nicole", "nova")),
    *(f"af_{n}" for n in ("river", "sarah", "sky")),
    *(f"am_{n}" for n in ("adam", "echo", "eric", "fenrir", "liam", "michael", "onyx", "puck", "santa")),
    *(f"bf_{n}" for n in ("alice", "emma", "isabella", "lily")),
    *(f"bm_{n}" for n in ("daniel", "fable", "george", "lewis")),
    *("ef_dora", "em_alex", "em_santa", "ff_siwis", "hf_alpha", "hf_beta", "hm_omega", "hm_psi"),
    *("if_sara", "im_nicola", "jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"),
    *("pf_dora", "pm_alex", "pm_santa"),
    *(f"zf_{n}" for n in ("xiaobei", "xiaoni", "xiaoxiao", "xiaoyi")),
    *(f"zm_{n}" for n in ("yunjian", "yunxi", "yunxia", "yunyang")),
)
"""Kokoro-82M v1.0's 54 voice packs (hexgrad's VOICES.md): what the container ships (from the `kokoro`
sdist, `tts/engines/weights.py`) and what the deploy's `--model-source hub` fetches. The first letter is
the language the voice was trained on, the second its gender (`tts/voices.py`)."""
DEFAULT_VOICE = "af_heart"
"""The voice a request that names none speaks in, on every transport and every model source: Kokoro's
own default (KPipeline's examples, Kokoro-FastAPI), American English, the highest graded of its voices."""
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
