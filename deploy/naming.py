"""Deterministic names: stacks, prefixes, repositories (each part's stacks in order: deploy/parts/).

Destroy, status and the retention notice find everything again from these names alone, so they work
without synthesizing anything.
"""

from __future__ import annotations

from facts import STT_ENDPOINT

VARIANT_NAME = "AllTraffic"
RUNTIME_ENDPOINT_NAME = "live"
MODEL_PREFIX_ROOT = "models"
CDK_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION_PARAMETER = f"/cdk-bootstrap/{CDK_QUALIFIER}/version"
MIN_BOOTSTRAP_VERSION = 6


def speech_stack(model: str, role: str) -> str:
    return f"KokoroSpeech-{model}-{role}"


def listening_stack(role: str) -> str:
    """The speech-to-text endpoint's stacks (one model: Whisper base, baked into its image)."""
    return f"WhisperListening-{STT_ENDPOINT}-{role}"


def agent_stack(role: str) -> str:
    return f"VoiceAgent-{role}"


def model_prefix(model: str) -> str:
    """The key prefix of the model weights in the cache bucket (ends in `/`, as S3Prefix requires)."""
    return f"{MODEL_PREFIX_ROOT}/{model}/"


def assets_repository(account: str, region: str) -> str:
    """The CDK bootstrap ECR repository that holds every image asset of the account and region."""
    return f"cdk-{CDK_QUALIFIER}-container-assets-{account}-{region}"
