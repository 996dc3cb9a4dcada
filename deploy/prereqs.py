"""Everything a deploy needs before it starts, checked together and reported together.

A deploy that fails twenty minutes in because the account was never bootstrapped, or fails four
times in a row for four different reasons, wastes an afternoon; one list of every missing piece
does not.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from botocore.exceptions import BotoCoreError, ClientError

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import MissingPrerequisites, Problem
from deploy.images import CDK_QUALIFIER
from deploy.parts.base import Identity, Part

DOCKER_TIMEOUT_S = 30
BOOTSTRAP_VERSION_PARAMETER = f"/cdk-bootstrap/{CDK_QUALIFIER}/version"
MIN_BOOTSTRAP_VERSION = 6


def check_identity(aws: Aws, problems: list[Problem]) -> Identity | None:
    """Credentials and region, confirmed by STS; appends what is missing to `problems`."""
    region = aws.resolved_region
    credentials = aws.session.get_credentials()
    if region is None:
        problems.append(Problem("AWS region", "no region configured", "set AWS_REGION or pass --region"))
    if credentials is None:
        problems.append(
            Problem(
                "AWS credentials",
                "none found (environment, shared config, SSO or instance role)",
                "run `aws configure` or `aws sso login`, or set AWS_PROFILE",
            )
        )
    if region is None or credentials is None:
        return None
    try:
        caller = aws.client("sts").get_caller_identity()
    except (ClientError, BotoCoreError) as exc:
        problems.append(
            Problem("AWS credentials", f"rejected by STS: {exc}", "refresh or replace the credentials")
        )
        return None
    return Identity(account=caller["Account"], region=region, arn=caller["Arn"])


def check_bootstrap(aws: Aws, identity: Identity, problems: list[Problem]) -> None:
    """CDK bootstrap: the version parameter that every synthesized template checks at deploy time."""
    fix = f"cdk bootstrap aws://{identity.account}/{identity.region}"
    try:
        value = aws.client("ssm").get_parameter(Name=BOOTSTRAP_VERSION_PARAMETER)["Parameter"]["Value"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ParameterNotFound":
            problems.append(
                Problem(
                    "CDK bootstrap",
                    f"account {identity.account} in {identity.region} is not bootstrapped "
                    f"({BOOTSTRAP_VERSION_PARAMETER} missing)",
                    fix,
                )
            )
        else:
            problems.append(
                Problem("CDK bootstrap", f"could not read {BOOTSTRAP_VERSION_PARAMETER}: {exc}", fix)
            )
        return
    except BotoCoreError as exc:
        problems.append(Problem("CDK bootstrap", f"could not read {BOOTSTRAP_VERSION_PARAMETER}: {exc}", fix))
        return
    if not value.isdigit() or int(value) < MIN_BOOTSTRAP_VERSION:
        problems.append(
            Problem("CDK bootstrap", f"bootstrap version {value} is older than {MIN_BOOTSTRAP_VERSION}", fix)
        )


def check_cdk_cli(config: DeployConfig, problems: list[Problem]) -> None:
    if shutil.which(config.cdk_command[0]) is None:
        problems.append(
            Problem(
                "cdk CLI",
                f"{config.cdk_command[0]!r} is not on PATH",
                "npm install -g aws-cdk@2, or set DEPLOY_CDK_CLI='npx aws-cdk@2'",
            )
        )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=DOCKER_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def needs_docker(parts: Sequence[Part]) -> tuple[bool, bool]:
    """(any image asset to build, an ARM64 agent image among them)."""
    built = [part for part in parts if part.builds_image()]
    return bool(built), any(part.arm64_image for part in built)


def check_docker(config: DeployConfig, parts: Sequence[Part], problems: list[Problem]) -> None:
    """A Docker engine when images are built from source (not needed when image URIs are given)."""
    build, arm64 = needs_docker(parts)
    if not build:
        return
    fix = (
        "start a Docker engine, or pass images already in ECR (--image-uri, --tts-/--stt-/--agent-image-uri)"
    )
    info = _run([config.docker_command, "info", "--format", "{{.ServerVersion}}"])
    if info is None or info.returncode != 0:
        seen = (
            "not installed or not answering"
            if info is None
            else (info.stderr.strip().splitlines() or ["no answer"])[-1]
        )
        problems.append(Problem("Docker engine", f"needed to build the image assets: {seen}", fix))
        return
    if arm64:
        builders = _run([config.docker_command, "buildx", "ls"])
        if builders is None or builders.returncode != 0 or "linux/arm64" not in builders.stdout:
            problems.append(
                Problem(
                    "Docker ARM64 builds",
                    "the agent image is ARM64 (AgentCore runs only ARM64); "
                    "no buildx builder offers linux/arm64",
                    "docker run --privileged --rm tonistiigi/binfmt --install arm64, "
                    "or pass --agent-image-uri",
                )
            )


def check_prerequisites(config: DeployConfig, aws: Aws, parts: Sequence[Part]) -> Identity:
    """Check everything; raise `MissingPrerequisites` listing every problem, else return who deploys where."""
    problems: list[Problem] = []
    identity = check_identity(aws, problems)
    check_cdk_cli(config, problems)
    check_docker(config, parts, problems)
    if identity is None:
        problems.append(
            Problem(
                "CDK bootstrap", "not checked: it needs working credentials and a region", "fix those first"
            )
        )
    else:
        check_bootstrap(aws, identity, problems)
        for part in parts:
            part.check(aws, identity, parts, problems)
    if problems:
        raise MissingPrerequisites(problems)
    assert identity is not None
    return identity


def require_identity(aws: Aws) -> Identity:
    """Credentials and region only: what destroy and status need."""
    problems: list[Problem] = []
    identity = check_identity(aws, problems)
    if identity is None:
        raise MissingPrerequisites(problems)
    return identity
