"""The deploy commands' one configuration object, read from `DEPLOY_*` variables by `from_env()`.

Command-line flags override single fields (passed to `from_env`); validation happens once, in
`__post_init__`, so a bad value is a `ConfigError` before anything is synthesized or called.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from agent.config import AgentConfig
from deploy.bedrock import validate_model_id
from deploy.capacity import capacity_file, measured_capacity
from deploy.errors import ConfigError
from deploy.gpu import ami_named, is_gpu_instance
from deploy.images import parse_ecr_uri
from facts import STT_ENDPOINT, TTS_ENDPOINT

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SpeechImage:
    """A speech model's GPU image: its Dockerfile (repository-root context), the locked requirements
    (uv.lock exported with hashes) that the Dockerfile installs, and the library it computes with on
    the GPU, whose CUDA build those requirements say (deploy/gpu.py)."""

    dockerfile: str
    requirements: str
    library: str


# The speech models this package can deploy: Kokoro speaks (the speech part), Whisper listens (the
# listening part, deploy/parts/listening.py).
SPEECH_MODELS = {TTS_ENDPOINT: SpeechImage("tts/Dockerfile.gpu", "tts/requirements/gpu.txt", "torch")}
LISTENING_IMAGE = SpeechImage("stt/Dockerfile.gpu", "stt/requirements/gpu.txt", "ctranslate2")


@dataclass(frozen=True)
class EndpointSettings:
    """One SageMaker endpoint as the deploy is asked for it: its name, its image (built from `image`'s
    Dockerfile unless `image_uri` names one in ECR), its instances and its autoscaling target."""

    name: str
    image: SpeechImage
    image_uri: str | None
    instance_type: str
    instance_count: int
    max_instance_count: int
    target_concurrency: float | None
    """Sessions per instance that autoscaling aims for."""

    @property
    def autoscaling(self) -> bool:
        return self.max_instance_count > self.instance_count

    def check(self, flags: str) -> None:
        """A `ConfigError` naming the flag (`flags`: its flags' prefix, `--` or `--stt-`)."""
        if not _INSTANCE_TYPE.fullmatch(self.instance_type):
            raise ConfigError(
                f"{flags}instance-type: the instance type must look like ml.g5.xlarge, "
                f"got {self.instance_type!r}"
            )
        if self.instance_count < 1:
            raise ConfigError(
                f"{flags}instance-count: the instance count must be at least 1, got {self.instance_count}"
            )
        if self.max_instance_count < self.instance_count:
            raise ConfigError(
                f"{flags}max-instance-count ({self.max_instance_count}) is below the instance count "
                f"({self.instance_count}); set it equal to disable autoscaling"
            )
        if self.target_concurrency is not None and not self.target_concurrency > 0:
            raise ConfigError(
                f"{flags}target-concurrency: the target must be positive, got {self.target_concurrency}"
            )
        if not _ENDPOINT_NAME.fullmatch(self.name):
            raise ConfigError(f"{self.name!r} is not a valid SageMaker endpoint name")
        if self.image_uri:
            parse_ecr_uri(self.image_uri)


AGENT_DOCKERFILE = "agent/Dockerfile"
# Where the endpoint's weights come from (deploy/model_dir.py); a directory is given as `model_dir`.
MODEL_SOURCES = ("auto", "hub", "offline")
# Where the stacks are applied: AWS's CloudFormation, or the running emulator's (deploy/local_toolkit.py).
TARGETS = ("aws", "local")
DEFAULT_BEDROCK_MODEL_ID = AgentConfig.bedrock_model_id

_ENDPOINT_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_RUNTIME_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")
_INSTANCE_TYPE = re.compile(r"ml\.[a-z0-9]+\.[a-z0-9]+")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _env_number(name: str, default: float, kind: type = int) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc


def _env_path(name: str) -> Path | None:
    raw = os.environ.get(name)
    return Path(raw).expanduser() if raw else None


def _env_flag(name: str) -> bool | None:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return None
    if raw not in {"1", "true", "yes", "0", "false", "no"}:
        raise ConfigError(f"{name} must be 1/true/yes or 0/false/no, got {raw!r}")
    return raw in {"1", "true", "yes"}


def measured_sessions() -> float:
    """The sessions one replica keeps gap-free, as this repository's capacity measurement has them."""
    return float(measured_capacity(capacity_file(REPO_ROOT)).sessions)


@dataclass(frozen=True)
class DeployConfig:
    """Everything the stacks and the commands need; one instance per command run."""

    model: str = TTS_ENDPOINT
    region: str | None = None
    instance_type: str = "ml.g5.xlarge"
    inference_ami: str | None = None
    instance_count: int = 1
    max_instance_count: int = 1
    target_concurrency: float = field(default_factory=measured_sessions)
    """Concurrent requests (sessions) per instance that autoscaling aims for: by default the sessions one
    replica keeps gap-free, as `python -m benchmarks capacity` measured them (deploy/capacity.py)."""
    tts_image_uri: str | None = None
    model_dir: Path | None = None
    model_source: str = "auto"
    export_dir: Path = Path.home() / ".cache" / "voice-agent-aws" / "model-export"
    bedrock_model_id: str = DEFAULT_BEDROCK_MODEL_ID
    tts_endpoint: str | None = None
    tts_voice: str | None = None
    runtime_name: str = "voice_agent"
    agent_image_uri: str | None = None
    source_dir: Path = REPO_ROOT
    outdir: Path = REPO_ROOT / "cdk.out"
    cdk_command: tuple[str, ...] = ("cdk",)
    docker_command: str = "docker"
    wait_delay_s: float = 30.0
    wait_timeout_s: float = 3600.0
    target: str = "aws"
    alarm_email: str | None = None
    """Where the endpoint's alarms send ALARM and OK (an SNS topic with this email subscribed); none: no
    topic, the alarms only change state."""
    first_audio_alarm_ms: float = 1000.0
    """The p90 time to first audio over which the first-audio alarm fires (the product's promise to a
    listener, not a speed of this machine)."""
    over_capacity_alarm_minutes: int = 5
    listen: bool = False
    """Deploy the speech-to-text endpoint too (the listening part), and give the agent its name and the
    right to stream to it; off by default: it is a second GPU instance (deploy/README.md, "Listening")."""
    stt_endpoint: str = STT_ENDPOINT
    stt_instance_type: str = "ml.g5.xlarge"
    stt_instance_count: int = 1
    stt_max_instance_count: int = 1
    stt_target_concurrency: float | None = None
    """Open streams (conversations) per instance that the stt endpoint's autoscaling aims for. No default:
    no GPU figure is measured for the stt container yet, so autoscaling it needs one given."""
    stt_image_uri: str | None = None
    host_platform: bool = False
    """`--target local` only: the emulator builds the image assets for its Docker engine's own platform
    (amd64 here: minutes faster) instead of the platform each names (the agent's linux/arm64, run under
    emulation as AgentCore runs it on ARM64), and says so in the stack's events."""

    def __post_init__(self) -> None:
        if self.model not in SPEECH_MODELS:
            raise ConfigError(f"unknown speech model {self.model!r}; known: {', '.join(SPEECH_MODELS)}")
        if self.target not in TARGETS:
            raise ConfigError(f"target must be {' or '.join(TARGETS)}, got {self.target!r}")
        if self.host_platform and self.target != "local":
            raise ConfigError("--host-platform is for --target local: AWS builds the agent for linux/arm64")
        if self.model_source not in MODEL_SOURCES:
            raise ConfigError(
                f"model source must be {', '.join(MODEL_SOURCES)} or a directory, got {self.model_source!r}"
            )
        self.speech_endpoint.check("--")
        self.listening_endpoint.check("--stt-")
        if self.listening_endpoint.autoscaling and self.stt_target_concurrency is None:
            raise ConfigError(
                "--stt-max-instance-count above --stt-instance-count autoscales the stt endpoint on open "
                "streams per instance: give --stt-target-concurrency (no GPU figure is measured for it yet)"
            )
        if self.inference_ami is not None:
            ami_named(self.inference_ami)
            if not is_gpu_instance(self.instance_type):
                raise ConfigError(
                    f"--inference-ami {self.inference_ami} is a GPU AMI; {self.instance_type} has no GPU"
                )
        if self.stt_endpoint == self.endpoint_name:
            raise ConfigError(f"the tts and stt endpoints are both named {self.endpoint_name!r}")
        if not _RUNTIME_NAME.fullmatch(self.runtime_name):
            raise ConfigError(
                f"runtime name {self.runtime_name!r} must start with a letter and hold only letters, "
                "digits and underscores (at most 48)"
            )
        validate_model_id(self.bedrock_model_id)
        if self.agent_image_uri:
            parse_ecr_uri(self.agent_image_uri)
        if not self.cdk_command:
            raise ConfigError("the cdk command is empty")
        if self.alarm_email is not None and not _EMAIL.fullmatch(self.alarm_email):
            raise ConfigError(f"--alarm-email {self.alarm_email!r} is not an email address")
        if not self.first_audio_alarm_ms > 0 or self.over_capacity_alarm_minutes < 1:
            raise ConfigError(
                "the first-audio alarm threshold and the over-capacity minutes must be positive"
            )
        if not (self.wait_delay_s > 0 and self.wait_timeout_s > 0):
            raise ConfigError("wait delay and wait timeout must be positive")

    @property
    def endpoint_name(self) -> str:
        """The SageMaker endpoint the agent speaks through: its own setting, else the model's name."""
        return self.tts_endpoint or self.model

    @property
    def speech_endpoint(self) -> EndpointSettings:
        """The Kokoro endpoint (the speech part)."""
        return EndpointSettings(
            self.endpoint_name,
            SPEECH_MODELS[self.model],
            self.tts_image_uri,
            self.instance_type,
            self.instance_count,
            self.max_instance_count,
            self.target_concurrency,
        )

    @property
    def listening_endpoint(self) -> EndpointSettings:
        """The speech-to-text endpoint (the listening part)."""
        return EndpointSettings(
            self.stt_endpoint,
            LISTENING_IMAGE,
            self.stt_image_uri,
            self.stt_instance_type,
            self.stt_instance_count,
            self.stt_max_instance_count,
            self.stt_target_concurrency,
        )

    @property
    def wait_attempts(self) -> int:
        return max(1, math.ceil(self.wait_timeout_s / self.wait_delay_s))

    @classmethod
    def from_env(cls, **overrides: object) -> DeployConfig:
        env = os.environ
        values: dict[str, object] = {
            "model": env.get("DEPLOY_MODEL") or cls.model,
            "region": env.get("DEPLOY_REGION") or None,
            "instance_type": env.get("DEPLOY_INSTANCE_TYPE") or cls.instance_type,
            "inference_ami": env.get("DEPLOY_INFERENCE_AMI") or None,
            "instance_count": int(_env_number("DEPLOY_INSTANCE_COUNT", cls.instance_count)),
            "tts_image_uri": env.get("DEPLOY_TTS_IMAGE_URI") or None,
            "model_dir": _env_path("DEPLOY_MODEL_DIR"),
            "model_source": env.get("DEPLOY_MODEL_SOURCE") or cls.model_source,
            "export_dir": _env_path("DEPLOY_EXPORT_DIR") or cls.export_dir,
            "bedrock_model_id": env.get("DEPLOY_BEDROCK_MODEL_ID")
            or env.get("AGENT_BEDROCK_MODEL_ID")
            or cls.bedrock_model_id,
            "tts_endpoint": env.get("DEPLOY_TTS_ENDPOINT") or None,
            "tts_voice": env.get("AGENT_TTS_VOICE") or None,
            "runtime_name": env.get("DEPLOY_RUNTIME_NAME") or cls.runtime_name,
            "agent_image_uri": env.get("DEPLOY_AGENT_IMAGE_URI") or None,
            "source_dir": _env_path("DEPLOY_SOURCE_DIR") or cls.source_dir,
            "outdir": _env_path("DEPLOY_OUTDIR"),
            "cdk_command": tuple(shlex.split(env.get("DEPLOY_CDK_CLI") or "cdk")),
            "docker_command": env.get("DEPLOY_DOCKER") or cls.docker_command,
            "wait_delay_s": _env_number("DEPLOY_WAIT_DELAY_S", cls.wait_delay_s, float),
            "wait_timeout_s": _env_number("DEPLOY_WAIT_TIMEOUT_S", cls.wait_timeout_s, float),
            "target": env.get("DEPLOY_TARGET") or cls.target,
            "alarm_email": env.get("DEPLOY_ALARM_EMAIL") or None,
            "first_audio_alarm_ms": _env_number(
                "DEPLOY_FIRST_AUDIO_ALARM_MS", cls.first_audio_alarm_ms, float
            ),
            "over_capacity_alarm_minutes": int(
                _env_number("DEPLOY_OVER_CAPACITY_ALARM_MINUTES", cls.over_capacity_alarm_minutes)
            ),
            "listen": bool(_env_flag("DEPLOY_LISTEN")),
            "stt_endpoint": env.get("DEPLOY_STT_ENDPOINT") or cls.stt_endpoint,
            "stt_instance_type": env.get("DEPLOY_STT_INSTANCE_TYPE") or cls.stt_instance_type,
            "stt_instance_count": int(_env_number("DEPLOY_STT_INSTANCE_COUNT", cls.stt_instance_count)),
            "stt_image_uri": env.get("DEPLOY_STT_IMAGE_URI") or None,
        }
        if env.get("DEPLOY_TARGET_CONCURRENCY"):
            values["target_concurrency"] = _env_number("DEPLOY_TARGET_CONCURRENCY", 0.0, float)
        if env.get("DEPLOY_STT_TARGET_CONCURRENCY"):
            values["stt_target_concurrency"] = _env_number("DEPLOY_STT_TARGET_CONCURRENCY", 0.0, float)
        values.update({key: value for key, value in overrides.items() if value is not None})
        if values["outdir"] is None:
            values["outdir"] = Path(values["source_dir"]) / "cdk.out"  # type: ignore[arg-type]
        # Without an explicit maximum an endpoint keeps a fixed size (no autoscaling).
        for prefix, variable in (
            ("", "DEPLOY_MAX_INSTANCE_COUNT"),
            ("stt_", "DEPLOY_STT_MAX_INSTANCE_COUNT"),
        ):
            default_max = values[f"{prefix}instance_count"]
            values.setdefault(f"{prefix}max_instance_count", int(_env_number(variable, default_max)))
        return cls(**values)  # type: ignore[arg-type]
