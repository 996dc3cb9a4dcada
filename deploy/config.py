"""The deploy commands' one configuration object, read from `DEPLOY_*` variables by `from_env()`.

Command-line flags override single fields (passed to `from_env`); validation happens once, in
`__post_init__`, so a bad value is a `ConfigError` before anything is synthesized or called. What is
not asked for is the product's definition (`product`, deploy/product.py): the endpoints' names and
instances, the runtime's name, the voice. Each thing has one name: `tts_endpoint` and `stt_endpoint`
(the two endpoints), `runtime_name` (the agent's runtime), `voice`.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from agent.config import AgentConfig
from deploy import product as definition
from deploy.bedrock import validate_model_id
from deploy.capacity import capacity_file, measured_capacity
from deploy.errors import ConfigError
from deploy.gpu import ami_named, is_gpu_instance
from deploy.images import parse_ecr_uri
from deploy.product import FIRST_AUDIO_ALARM_MS, Endpoint, GpuImage, Product

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class EndpointSettings:
    """One SageMaker endpoint of the product (`definition`) as the deploy is asked for it: its name, its
    image (built from the definition's GPU Dockerfile unless `image_uri` names one in ECR), its instances
    and its autoscaling target."""

    definition: Endpoint
    name: str
    image_uri: str | None
    instance_type: str
    instance_count: int
    max_instance_count: int
    target_concurrency: float | None
    """Sessions per instance that autoscaling aims for."""

    @property
    def image(self) -> GpuImage:
        return self.definition.gpu_image

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


# Where the endpoint's weights come from (deploy/model_dir.py); a directory is given as `model_dir`.
MODEL_SOURCES = ("auto", "hub", "offline")
# Where the stacks are applied: AWS's CloudFormation, or the running emulator's (deploy/local_toolkit.py).
TARGETS = ("aws", "local")
DEFAULT_BEDROCK_MODEL_ID = AgentConfig.bedrock_model_id

_ENDPOINT_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_RUNTIME_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")
_INSTANCE_TYPE = re.compile(r"ml\.[a-z0-9]+\.[a-z0-9]+")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _env_number(name: str, kind: type = int) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
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


def current_product() -> Product:
    """The definition as it is when a config is made (`product.PRODUCT`, read then: a test may replace it)."""
    return definition.PRODUCT


@dataclass(frozen=True)
class DeployConfig:
    """Everything the stacks and the commands need; one instance per command run. A field left None
    is the product's (`product`): after construction every one of them holds its value."""

    product: Product = field(default_factory=current_product)
    region: str | None = None
    tts_endpoint: str | None = None
    """The Kokoro endpoint (the product's `kokoro-82m`): the one the agent speaks through."""
    instance_type: str | None = None
    inference_ami: str | None = None
    instance_count: int | None = None
    max_instance_count: int | None = None
    """Above the instance count: autoscaling; None: the instance count (a fixed size)."""
    target_concurrency: float = field(default_factory=measured_sessions)
    """Concurrent requests (sessions) per instance that autoscaling aims for: by default the sessions one
    replica keeps gap-free, as `python -m benchmarks capacity` measured them (deploy/capacity.py)."""
    tts_image_uri: str | None = None
    model_dir: Path | None = None
    model_source: str = "auto"
    export_dir: Path = Path.home() / ".cache" / "voice-agent-aws" / "model-export"
    bedrock_model_id: str = DEFAULT_BEDROCK_MODEL_ID
    voice: str | None = None
    """The Kokoro endpoint's default voice and the agent's (the product's unless `--voice`)."""
    runtime_name: str | None = None
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
    first_audio_alarm_ms: float = FIRST_AUDIO_ALARM_MS
    over_capacity_alarm_minutes: int = 5
    listen: bool = False
    """Deploy the speech-to-text endpoint too (the listening part), and give the agent its name and the
    right to stream to it; off by default: it is a second GPU instance (deploy/README.md, "Listening")."""
    stt_endpoint: str | None = None
    stt_instance_type: str | None = None
    stt_instance_count: int | None = None
    stt_max_instance_count: int | None = None
    stt_target_concurrency: float | None = None
    """Open streams (conversations) per instance that the stt endpoint's autoscaling aims for. No default:
    no GPU figure is measured for the stt container yet, so autoscaling it needs one given."""
    stt_image_uri: str | None = None
    host_platform: bool = False
    """`--target local` only: the emulator builds the image assets for its Docker engine's own platform
    (amd64 here: minutes faster) instead of the platform each names (the agent's linux/arm64, run under
    emulation as AgentCore runs it on ARM64), and says so in the stack's events."""

    def __post_init__(self) -> None:
        speech, listening = self.product.speech, self.product.listening
        defined = {
            "tts_endpoint": speech.name,
            "instance_type": speech.instance_type,
            "instance_count": speech.instance_count,
            "voice": self.product.voice,
            "runtime_name": self.product.agent.name,
            "stt_endpoint": listening.name,
            "stt_instance_type": listening.instance_type,
            "stt_instance_count": listening.instance_count,
        }
        for name, value in defined.items():  # frozen: set once, here, as dataclasses' own __init__ does
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        for prefix in ("", "stt_"):
            if getattr(self, f"{prefix}max_instance_count") is None:
                object.__setattr__(
                    self, f"{prefix}max_instance_count", getattr(self, f"{prefix}instance_count")
                )
        self._check_endpoints()
        self._check_rest()

    def _check_endpoints(self) -> None:
        self.speech_endpoint.check("--")
        self.listening_endpoint.check("--stt-")
        if self.listening_endpoint.autoscaling and self.stt_target_concurrency is None:
            raise ConfigError(
                "--stt-max-instance-count above --stt-instance-count autoscales the stt endpoint on open "
                "streams per instance: give --stt-target-concurrency (no GPU figure is measured for it yet)"
            )
        if self.inference_ami is not None:
            ami_named(self.inference_ami)
            if not is_gpu_instance(self.speech_endpoint.instance_type):
                raise ConfigError(
                    f"--inference-ami {self.inference_ami} is a GPU AMI; {self.instance_type} has no GPU"
                )
        if self.stt_endpoint == self.tts_endpoint:
            raise ConfigError(f"the tts and stt endpoints are both named {self.tts_endpoint!r}")

    def _check_rest(self) -> None:
        if self.target not in TARGETS:
            raise ConfigError(f"target must be {' or '.join(TARGETS)}, got {self.target!r}")
        if self.host_platform and self.target != "local":
            raise ConfigError("--host-platform is for --target local: AWS builds the agent for linux/arm64")
        if self.model_source not in MODEL_SOURCES:
            raise ConfigError(
                f"model source must be {', '.join(MODEL_SOURCES)} or a directory, got {self.model_source!r}"
            )
        if not _RUNTIME_NAME.fullmatch(str(self.runtime_name)):
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
    def speech_endpoint(self) -> EndpointSettings:
        """The Kokoro endpoint, as asked for."""
        return EndpointSettings(
            self.product.speech,
            self.tts_endpoint,
            self.tts_image_uri,
            self.instance_type,
            self.instance_count,
            self.max_instance_count,
            self.target_concurrency,
        )  # type: ignore[arg-type]

    @property
    def listening_endpoint(self) -> EndpointSettings:
        """The speech-to-text endpoint, as asked for."""
        return EndpointSettings(
            self.product.listening,
            self.stt_endpoint,
            self.stt_image_uri,
            self.stt_instance_type,
            self.stt_instance_count,
            self.stt_max_instance_count,
            self.stt_target_concurrency,
        )  # type: ignore[arg-type]

    @property
    def wait_attempts(self) -> int:
        return max(1, math.ceil(self.wait_timeout_s / self.wait_delay_s))

    @classmethod
    def from_env(cls, **overrides: object) -> DeployConfig:
        """The `DEPLOY_*` variables (deploy/README.md lists them), then `overrides` (the flags) over them."""
        env = os.environ
        values: dict[str, object] = {
            "region": env.get("DEPLOY_REGION"),
            "tts_endpoint": env.get("DEPLOY_TTS_ENDPOINT"),
            "instance_type": env.get("DEPLOY_INSTANCE_TYPE"),
            "inference_ami": env.get("DEPLOY_INFERENCE_AMI"),
            "instance_count": _env_number("DEPLOY_INSTANCE_COUNT"),
            "max_instance_count": _env_number("DEPLOY_MAX_INSTANCE_COUNT"),
            "target_concurrency": _env_number("DEPLOY_TARGET_CONCURRENCY", float),
            "tts_image_uri": env.get("DEPLOY_TTS_IMAGE_URI"),
            "model_dir": _env_path("DEPLOY_MODEL_DIR"),
            "model_source": env.get("DEPLOY_MODEL_SOURCE"),
            "export_dir": _env_path("DEPLOY_EXPORT_DIR"),
            "bedrock_model_id": env.get("DEPLOY_BEDROCK_MODEL_ID") or env.get("AGENT_BEDROCK_MODEL_ID"),
            "voice": env.get("AGENT_TTS_VOICE"),
            "runtime_name": env.get("DEPLOY_RUNTIME_NAME"),
            "agent_image_uri": env.get("DEPLOY_AGENT_IMAGE_URI"),
            "source_dir": _env_path("DEPLOY_SOURCE_DIR"),
            "outdir": _env_path("DEPLOY_OUTDIR"),
            "cdk_command": tuple(shlex.split(env.get("DEPLOY_CDK_CLI") or "")) or None,
            "docker_command": env.get("DEPLOY_DOCKER"),
            "wait_delay_s": _env_number("DEPLOY_WAIT_DELAY_S", float),
            "wait_timeout_s": _env_number("DEPLOY_WAIT_TIMEOUT_S", float),
            "target": env.get("DEPLOY_TARGET"),
            "alarm_email": env.get("DEPLOY_ALARM_EMAIL"),
            "first_audio_alarm_ms": _env_number("DEPLOY_FIRST_AUDIO_ALARM_MS", float),
            "over_capacity_alarm_minutes": _env_number("DEPLOY_OVER_CAPACITY_ALARM_MINUTES"),
            "listen": _env_flag("DEPLOY_LISTEN"),
            "stt_endpoint": env.get("DEPLOY_STT_ENDPOINT"),
            "stt_instance_type": env.get("DEPLOY_STT_INSTANCE_TYPE"),
            "stt_instance_count": _env_number("DEPLOY_STT_INSTANCE_COUNT"),
            "stt_max_instance_count": _env_number("DEPLOY_STT_MAX_INSTANCE_COUNT"),
            "stt_target_concurrency": _env_number("DEPLOY_STT_TARGET_CONCURRENCY", float),
            "stt_image_uri": env.get("DEPLOY_STT_IMAGE_URI"),
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        given = {key: value for key, value in values.items() if value is not None and value != ""}
        if "outdir" not in given:
            given["outdir"] = Path(given.get("source_dir", REPO_ROOT)) / "cdk.out"  # type: ignore[arg-type]
        return cls(**given)  # type: ignore[arg-type]
