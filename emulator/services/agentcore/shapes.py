"""Bedrock AgentCore requests checked as the service model constrains them: names, ARNs, the container
artifact, the environment and tag maps, the members CreateAgentRuntime and UpdateAgentRuntime share;
and the service's timestamps (iso8601)."""

from __future__ import annotations

import datetime
import re
import string
from collections.abc import Mapping
from typing import Any

from emulator.services.agentcore.errors import field_error

RUNTIME_NAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
RUNTIME_ID_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,99}-[a-zA-Z0-9]{10}$")
ROLE_ARN_RE = re.compile(r"^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+$")
ENDPOINT_NAME_RE = RUNTIME_NAME_RE
DEFAULT_ENDPOINT = "DEFAULT"
MAX_ENVIRONMENT = 50
ARCHITECTURES = {"ARM64": "linux/arm64", "X86_64": "linux/amd64"}
"""AgentCore's CPU architectures (`cpuConfigurations[].architecture`) -> the image platform each runs."""
DEFAULT_ARCHITECTURE = "ARM64"
ID_ALPHABET = string.ascii_letters + string.digits


def iso(timestamp: float) -> str:
    """AgentCore's timestamps (iso8601, as the model declares them)."""
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).isoformat(timespec="milliseconds")


def required_string(body: Mapping[str, Any], name: str, pattern: re.Pattern[str] | None = None) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise field_error(
            name, f"Value null at '{name}' failed to satisfy constraint: Member must not be null"
        )
    if pattern is not None and not pattern.match(value):
        raise field_error(
            name,
            f"Value '{value}' at '{name}' failed to satisfy constraint: "
            f"Member must satisfy regular expression pattern: {pattern.pattern}",
        )
    return value


def container_uri(body: Mapping[str, Any]) -> str:
    artifact = body.get("agentRuntimeArtifact")
    if not isinstance(artifact, Mapping) or not artifact:
        raise field_error("agentRuntimeArtifact", "Member must not be null")
    container = artifact.get("containerConfiguration")
    if not isinstance(container, Mapping):
        raise field_error(
            "agentRuntimeArtifact",
            "only containerConfiguration artifacts are emulated (codeConfiguration needs S3)",
        )
    return required_string(container, "containerUri")


def string_map(body: Mapping[str, Any], name: str) -> dict[str, str]:
    """`environmentVariables` or `tags`: at most 50 string keys and values."""
    raw = body.get(name) or {}
    if not isinstance(raw, Mapping) or len(raw) > MAX_ENVIRONMENT:
        raise field_error(name, f"Member must be a map of at most {MAX_ENVIRONMENT} strings")
    if not all(isinstance(k, str) and k and isinstance(v, str) for k, v in raw.items()):
        raise field_error(name, "keys and values must be strings")
    return dict(raw)


def environment(body: Mapping[str, Any]) -> dict[str, str]:
    return string_map(body, "environmentVariables")


def architecture(body: Mapping[str, Any]) -> str:
    """The runtime's CPU architecture: its `cpuConfigurations` entry (at most one), ARM64 when omitted, as
    botocore's model documents it. (X86_64 needs the Runtime platform version V2 there; the emulator
    records `platformVersion` and does not check it.)"""
    configurations = body.get("cpuConfigurations") or []
    if not isinstance(configurations, list) or len(configurations) > 1:
        raise field_error("cpuConfigurations", "At most one entry is permitted")
    if not configurations:
        return DEFAULT_ARCHITECTURE
    entry = configurations[0]
    value = entry.get("architecture") if isinstance(entry, Mapping) else None
    if value not in ARCHITECTURES:
        raise field_error(
            "cpuConfigurations",
            f"Value '{value}' at 'cpuConfigurations.1.member.architecture' failed to satisfy constraint: "
            f"Member must satisfy enum value set: [{', '.join(ARCHITECTURES)}]",
        )
    return value


def check_request(body: Mapping[str, Any]) -> None:
    """The members CreateAgentRuntime and UpdateAgentRuntime share."""
    container_uri(body)
    architecture(body)
    required_string(body, "roleArn", ROLE_ARN_RE)
    environment(body)
    protocol = body.get("protocolConfiguration")
    if isinstance(protocol, Mapping) and protocol.get("serverProtocol", "HTTP") != "HTTP":
        raise field_error("protocolConfiguration", "only the HTTP server protocol is emulated")
