"""The emulator's one configuration object.

Everything tunable lives here (ports, runtime, probe timing, fidelity knobs, SigV4 keys, the Bedrock
service's LLM settings), read once from `EMULATOR_*` environment variables by `from_env()`. Tests build
it directly with the few fields they change (`dataclasses.replace`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_HOME = Path("~/.cache/voice-agent-aws/emulator")


class ConfigError(ValueError):
    """An `EMULATOR_*` variable or config value that cannot be used."""


ARBITRARY = "arbitrary"
"""`EMULATOR_RECHUNK=arbitrary` (the default): response streams are split at random points."""


@dataclass(frozen=True)
class ImageSpec:
    """What the emulator knows of an image without an engine: how the `process` runtime runs it (a
    command line and the image's labels), and which Dockerfile builds it for the `docker` runtime.

    `command` items may hold `{python}`, `{host}`, `{port}` and `{model_dir}` placeholders.
    `bidirectional` stands in for the image label
    `com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true`.
    `dockerfile` is relative to the repository root, the build context (`emulator/images/build.py`);
    `build_args` are its build arguments (container_kit/Dockerfile builds every model container's CPU
    image from them).
    """

    command: tuple[str, ...]
    bidirectional: bool = True
    dockerfile: str | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)
    listen_variables: tuple[str, str] | None = None
    """For the `docker` runtime: the variables (host, port) that tell this image's container where to
    listen when it shares the host's network. An AgentCore runtime's container calls the emulator at
    127.0.0.1, which it reaches only there, so it runs on the host's network on a free loopback port
    instead of AgentCore's 8080."""
    platform: str | None = None
    """The platform the image runs on in AWS when it is not any (the agent's linux/arm64, AgentCore's
    only one). `up --runtime docker` builds it for the engine's own platform, labelled as standing in
    for this one; `python -m emulator build --platform` and the deploy rehearsal build this one."""

    @classmethod
    def from_obj(cls, obj: Any) -> ImageSpec:
        if isinstance(obj, ImageSpec):
            return obj
        if isinstance(obj, list | tuple):
            return cls(command=tuple(str(x) for x in obj))
        if isinstance(obj, Mapping) and isinstance(obj.get("command"), list | tuple):
            dockerfile = obj.get("dockerfile")
            build_args = obj.get("build_args") or {}
            if not isinstance(build_args, Mapping):
                raise ConfigError(f"an image's build_args map names to values, got {build_args!r}")
            listen = obj.get("listen_variables")
            if listen is not None and not (isinstance(listen, list | tuple) and len(listen) == 2):
                raise ConfigError(f"an image's listen_variables are two names (host, port), got {listen!r}")
            return cls(
                command=tuple(str(x) for x in obj["command"]),
                bidirectional=bool(obj.get("bidirectional", True)),
                dockerfile=str(dockerfile) if dockerfile else None,
                build_args={str(k): str(v) for k, v in build_args.items()},
                listen_variables=(str(listen[0]), str(listen[1])) if listen else None,
                platform=str(obj["platform"]) if obj.get("platform") else None,
            )
        raise ConfigError(f"an image entry needs a command list, got {obj!r}")

    def argv(self, *, host: str, port: int, model_dir: str) -> list[str]:
        values = {"python": sys.executable, "host": host, "port": str(port), "model_dir": model_dir}
        return [part.format(**values) for part in self.command]


def default_images() -> dict[str, ImageSpec]:
    """The images the emulator knows by itself, matched on the repository's last part: its own test
    container, echo. Every other image comes with the manifest that runs it (its `images:` section: the
    product's, compose/*.yaml, are written from deploy/product.py) or `EMULATOR_IMAGES`."""
    return {
        "echo": ImageSpec(
            ("{python}", "-m", "emulator.echo_container", "--host", "{host}", "--port", "{port}"),
            dockerfile="emulator/echo.Dockerfile",
        ),
    }


@dataclass(frozen=True)
class EmulatorConfig:
    host: str = "127.0.0.1"
    http_port: int = 8790
    """Plain HTTP/1.1: control planes, the SageMaker runtime, Bedrock Runtime. 0 picks a free port."""
    h2_port: int = 8443
    """TLS + ALPN h2: the bidirectional stream. 0 picks a free port."""
    tls_hostname: str = "localhost"
    """Host name put in the HTTP/2 endpoint URL (the certificate also names 127.0.0.1)."""
    home: Path = DEFAULT_HOME
    """CA, certificates, extracted model data, replica logs, the detached emulator's state file."""
    runtime: str = "process"
    """`process` (local commands) or `docker`."""
    base_image: str = "python:3.12-slim"
    """BASE_IMAGE of the images `up --runtime docker` builds; a local Debian base when it cannot be pulled."""
    region: str = "us-east-1"
    account_id: str = "123456789012"
    images: Mapping[str, ImageSpec] = field(default_factory=default_images)

    # controller
    reconcile_interval_s: float = 1.0
    probe_timeout_s: float = 2.0
    unhealthy_probes: int = 5
    """A ready replica that fails this many /ping probes in a row (about 15 s without an answer with the
    default timing) is replaced: killed and restarted."""
    startup_timeout_s: float = 480.0
    """Default for a variant's ContainerStartupHealthCheckTimeoutInSeconds (SageMaker: 8 minutes)."""
    stop_grace_s: float = 30.0
    """SIGTERM, then SIGKILL this much later (SageMaker: 30 s)."""

    # runtime services
    invoke_timeout_s: float = 60.0
    ws_connect_timeout_s: float = 10.0
    ws_ping_interval_s: float = 60.0
    ws_ping_misses: int = 5
    end_of_input_grace_s: float = 5.0
    max_session_s: float = 1800.0
    unfragmented_completion_state: str | None = "COMPLETE"
    """CompletionState of an unfragmented container frame (None: leave the header out)."""
    close_1000_is_error: bool = False
    """Whether a container Close 1000 also becomes a ModelStreamError event."""

    # fidelity knobs
    latency_in_ms: float = 0.0
    """Added to every client -> container message."""
    latency_out_ms: float = 0.0
    """Added to every container -> client message."""
    jitter_in_ms: float = 0.0
    jitter_out_ms: float = 0.0
    rechunk: tuple[int, int] | str | None = ARBITRARY
    """How response streams are split (emulator.wire.fidelity.Rechunker): `"arbitrary"` (each container
    write cut at random points), parts of MIN..MAX bytes, or None (one part per container write)."""
    rechunk_seed: int | None = 0
    sigv4_keys: Mapping[str, str] = field(default_factory=dict)
    """Access key id -> secret; when non-empty every AWS request must carry a valid SigV4 signature."""

    # Bedrock (emulator/services/bedrock/, its reply models in emulator/llm/)
    bedrock_model_ids: tuple[str, ...] = ()
    """Model IDs (or ARNs) Bedrock answers beyond its table of known ones
    (emulator/services/bedrock/shapes.py): `EMULATOR_BEDROCK_MODEL_IDS=acme.model-v1:0,...`; a
    foundation-model ID brings its inference profiles (`us.`, `global.`) along."""
    llm_backend: str = "smollm2"
    """`smollm2` (a real local model, emulator/llm/smollm/: its GGUF's 4-bit blocks on onnxruntime-genai
    where installed, else float32 on torch; `smollm2-onnx` / `smollm2-torch` name one) or `script` (the
    deterministic paced script); a set `llm_openai_base_url` selects the OpenAI-compatible server instead."""
    llm_cache_dir: Path = Path("~/.cache/voice-agent-aws/llm")
    """SmolLM2's GGUF, its dequantized copy and its ONNX model (shared by every emulator home)."""
    llm_threads: int = 0
    """SmolLM2's threads; 0: one per four usable cores, at least one (emulator/llm/threads.py), so on the
    cores it shares with Kokoro speech keeps the rest."""
    llm_max_tokens: int = 80
    """SmolLM2's answer length in tokens: past it the answer ends at its next sentence end, at most 40
    tokens later (a request's smaller maxTokens wins)."""
    llm_first_token_ms: int = 400
    llm_tokens_per_s: float = 60.0
    llm_script: str | None = None
    llm_openai_base_url: str | None = None
    llm_openai_model: str | None = None

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmulatorConfig:
        """Read `EMULATOR_<FIELD>` variables (upper case field names) over the defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"EMULATOR_{f.name.upper()}")
            if raw is None or raw == "":
                continue
            try:
                values[f.name] = _parse(f.name, raw)
            except (ValueError, json.JSONDecodeError) as exc:
                raise ConfigError(f"EMULATOR_{f.name.upper()}={raw!r}: {exc}") from exc
        return cls(**values)


_INTS = {
    "http_port",
    "h2_port",
    "ws_ping_misses",
    "unhealthy_probes",
    "llm_first_token_ms",
    "llm_threads",
    "llm_max_tokens",
    "rechunk_seed",
}
_FLOATS = {
    "reconcile_interval_s",
    "probe_timeout_s",
    "startup_timeout_s",
    "stop_grace_s",
    "invoke_timeout_s",
    "ws_connect_timeout_s",
    "ws_ping_interval_s",
    "end_of_input_grace_s",
    "max_session_s",
    "latency_in_ms",
    "latency_out_ms",
    "jitter_in_ms",
    "jitter_out_ms",
    "llm_tokens_per_s",
}


def _parse(name: str, raw: str) -> Any:
    if name in _INTS:
        return int(raw)
    if name in _FLOATS:
        return float(raw)
    if name in {"home", "llm_cache_dir"}:
        return Path(raw)
    if name == "close_1000_is_error":
        if raw.lower() not in {"1", "0", "true", "false", "yes", "no"}:
            raise ValueError("expected true or false")
        return raw.lower() in {"1", "true", "yes"}
    if name == "unfragmented_completion_state":
        return None if raw.lower() in {"none", "absent"} else raw
    if name == "rechunk":
        return parse_rechunk(raw)
    if name == "bedrock_model_ids":
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    if name == "sigv4_keys":
        return parse_keys(raw)
    if name == "images":
        obj = json.loads(raw)
        if not isinstance(obj, dict):
            raise ValueError("expected a JSON object of image name -> command")
        return {**default_images(), **{k: ImageSpec.from_obj(v) for k, v in obj.items()}}
    return raw


def parse_rechunk(raw: str) -> tuple[int, int] | str | None:
    """`"arbitrary"` (the default), `"off"`, `"7"` -> parts of exactly 7 bytes, `"1-64"` -> random sizes
    from 1 to 64 bytes."""
    if raw.lower() in {"off", "none", "0"}:
        return None
    if raw.lower() == ARBITRARY:
        return ARBITRARY
    low, _, high = raw.partition("-")
    lo, hi = int(low), int(high or low)
    if lo < 1 or hi < lo:
        raise ValueError("expected arbitrary, off, N or MIN-MAX with 1 <= MIN <= MAX")
    return lo, hi


def parse_keys(raw: str) -> dict[str, str]:
    """`"AKID:SECRET,AKID2:SECRET2"` -> {AKID: SECRET, ...}."""
    keys: dict[str, str] = {}
    for item in raw.split(","):
        akid, sep, secret = item.strip().partition(":")
        if not sep or not akid or not secret:
            raise ValueError("expected ACCESS_KEY_ID:SECRET[,ACCESS_KEY_ID:SECRET...]")
        keys[akid] = secret
    return keys
