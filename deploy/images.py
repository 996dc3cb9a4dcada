"""Container images: what goes into an image asset's build context, the bidirectional-streaming label
check, image URIs given instead of assets (ECR only, which is what SageMaker and AgentCore pull), and the
CDK bootstrap's repository that holds the assets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from deploy.errors import ConfigError

BIDI_LABEL = "com.amazonaws.sagemaker.capabilities.bidirectional-streaming"
CDK_QUALIFIER = "hnb659fds"
"""The CDK bootstrap's default qualifier: its image-asset repository and version parameter carry it."""

# Kept out of the build context (the repository root): they are large, local, or never in an image.
ASSET_EXCLUDES = (
    ".git",
    ".venv",
    ".cache",
    ".ci",
    "cdk.out",
    "**/cdk.out",
    "**/__pycache__",
    "**/*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    "*.egg-info",
    "build",
    "dist",
    "node_modules",
    "tests",
)

_LABEL_LINE = re.compile(
    r"^\s*LABEL\b.*?[\"']?" + re.escape(BIDI_LABEL) + r"[\"']?\s*=\s*[\"']?true[\"']?", re.MULTILINE
)
_ECR_URI = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"
    r"/(?P<repository>[a-z0-9][a-z0-9._/-]*)(?::[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})"
)


def dockerfile_path(source_dir: Path, dockerfile: str) -> Path:
    path = source_dir / dockerfile
    if not path.is_file():
        raise ConfigError(
            f"{dockerfile} not found under {source_dir}; run from the repository (or set DEPLOY_SOURCE_DIR) "
            "or give an image URI instead"
        )
    return path


def has_bidi_label(dockerfile: Path) -> bool:
    return bool(_LABEL_LINE.search(dockerfile.read_text(encoding="utf-8")))


def require_bidi_label(source_dir: Path, dockerfile: str) -> Path:
    """SageMaker opens the WebSocket only for images that carry the label, so refuse to ship one without."""
    path = dockerfile_path(source_dir, dockerfile)
    if not has_bidi_label(path):
        raise ConfigError(f"{path} lacks `LABEL {BIDI_LABEL}=true`; SageMaker would not stream to it")
    return path


@dataclass(frozen=True)
class EcrImage:
    account: str
    region: str
    repository: str
    uri: str


def assets_repository(account: str, region: str) -> str:
    """The CDK bootstrap ECR repository that holds every image asset of the account and region."""
    return f"cdk-{CDK_QUALIFIER}-container-assets-{account}-{region}"


def parse_ecr_uri(uri: str) -> EcrImage:
    match = _ECR_URI.fullmatch(uri or "")
    if match is None:
        raise ConfigError(
            f"{uri!r} is not an ECR image URI with a tag or digest "
            "(ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPOSITORY:TAG)"
        )
    return EcrImage(match["account"], match["region"], match["repository"], uri)
