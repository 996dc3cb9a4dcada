"""The AWS `Toolkit` (deploy/toolkit.py): synthesize the app, deploy named stacks, take them down.

Python synthesis in this process, then `cdk deploy --app <assembly>` as a subprocess, so what is
deployed is exactly what was synthesized; its prerequisites are AWS's (credentials, the CDK CLI,
Docker, the bootstrap: deploy/prereqs.py); destroy deletes the stacks through CloudFormation
(deploy/teardown.py). Tests put a recorder in place of `deploy`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.errors import CdkFailed
from deploy.parts.base import Identity, Part
from deploy.prereqs import check_prerequisites
from deploy.teardown import destroy
from deploy.toolkit import Echo


class CdkToolkit:
    def __init__(self, config: DeployConfig):
        self.config = config

    def check(self, config: DeployConfig, aws: Aws, parts: Sequence[Part]) -> Identity:
        return check_prerequisites(config, aws, parts)

    def destroy(self, parts: Sequence[Part], aws: Aws, identity: Identity, echo: Echo) -> str:
        return destroy(self.config, parts, aws, identity, echo)

    def synth(self, parts: Sequence[Part]) -> Path:
        # Imported here: aws-cdk-lib is the `cdk` extra, and status and destroy run without it.
        from deploy.app import synth

        return synth(self.config, parts)

    def deploy_argv(self, stacks: Sequence[str]) -> list[str]:
        outdir = self.config.outdir
        return [
            *self.config.cdk_command,
            "deploy",
            "--app",
            str(outdir),
            "--exclusively",
            "--require-approval",
            "never",
            "--outputs-file",
            str(outdir / "outputs.json"),
            *stacks,
        ]

    def deploy(self, stacks: Sequence[str]) -> None:
        env = dict(os.environ)
        if self.config.region:
            env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = self.config.region
        result = subprocess.run(self.deploy_argv(stacks), env=env, check=False)
        if result.returncode != 0:
            raise CdkFailed(
                f"cdk deploy {' '.join(stacks)} failed (exit {result.returncode}); see its output above"
            )
