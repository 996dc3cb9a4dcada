"""The article's command lines, typed the way it gives them: `uv run speech-infra deploy kokoro-82m`,
`uv run agent-infra deploy --bedrock-model-id ...`, `uv run agent-infra demo --endpoint-url ... --prompt ...`.

They run through `uv run` when uv is here (on this environment, without syncing it), else through the
same console scripts. The demo talks to the local stack (the agent on the emulator); the deploy lines
talk to moto, which stands in for the AWS control planes the emulator does not have (STS, SSM,
CloudFormation): they get as far as AWS lets them here, the prerequisite report, since `cdk deploy`
cannot run without AWS.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.conftest import moto_url  # noqa: F401  (the moto server fixture)
from tests.support.paths import REPO

BIN = Path(sys.executable).parent


def article(*argv: str) -> list[str]:
    uv = shutil.which("uv", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    if uv is None:
        return [str(BIN / argv[0]), *argv[1:]]
    return [uv, "run", "--no-sync", "--active", *argv]


def run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**env, "VIRTUAL_ENV": sys.prefix}  # `uv run --active`: this environment, left as it is
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_agent_infra_demo_against_the_local_stack(stack) -> None:
    result = run(
        article(
            "agent-infra",
            "demo",
            "--endpoint-url",
            stack.agent_url,
            "--prompt",
            "Where is my order?",
            "--runs",
            "1",
        ),
        dict(os.environ),
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("answer: Thanks for waiting")
    assert {"bidi", "batch"} <= {line.split(" ")[0] for line in lines}


def test_deploy_lines_against_moto(moto_url: str, tmp_path: Path) -> None:  # noqa: F811
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "DEPLOY_", "AGENT_"))
    } | {
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "DEPLOY_CDK_CLI": "no-such-cdk",
    }
    for argv in (
        article("speech-infra", "deploy", "kokoro-82m", "--outdir", str(tmp_path / "cdk.out")),
        article(
            "agent-infra",
            "deploy",
            "--bedrock-model-id",
            "us.amazon.nova-lite-v1:0",
            "--outdir",
            str(tmp_path / "cdk.out"),
        ),
    ):
        result = run(argv, env, timeout=120)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "prerequisite(s) missing" in result.stderr and "- cdk CLI:" in result.stderr
        assert "- AWS credentials:" not in result.stderr, "moto answered as the account"
        assert "Traceback" not in result.stderr


@pytest.mark.timeout(60)
def test_the_command_lines_exist() -> None:
    for name in ("speech-infra", "agent-infra"):
        result = run(article(name, "--help"), dict(os.environ), timeout=50)
        assert result.returncode == 0 and "deploy" in result.stdout, result.stderr
