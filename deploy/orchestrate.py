"""Deploy and destroy in the right order, with every check up front and a status at the end.

Deploy: check prerequisites (all of them, one report) -> synthesize -> for each part in order (speech,
then agent): `cdk deploy` its stacks, then wait until the endpoint is InService / the runtime READY.
Destroy goes through the parts backwards (see `deploy.teardown`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deploy.aws import Aws
from deploy.cdk_toolkit import Cdk
from deploy.config import DeployConfig
from deploy.part import Identity, Part
from deploy.prereqs import check_prerequisites, require_identity
from deploy.status import Status
from deploy.teardown import destroy

Echo = Callable[[str], None]
Check = Callable[[DeployConfig, Aws, Sequence[Part]], Identity]


def deploy_parts(
    config: DeployConfig,
    parts: Sequence[Part],
    aws: Aws,
    cdk: Cdk,
    *,
    wait: bool = True,
    echo: Echo = print,
    check: Check = check_prerequisites,
) -> list[Status]:
    """`check` is AWS's prerequisites (credentials, CDK CLI, Docker, bootstrap), or the rehearsal's."""
    summary = [line for part in parts for line in part.summary()]  # refuses an image its AMI cannot run
    identity = check(config, aws, parts)
    echo(f"deploying to account {identity.account} in {identity.region} as {identity.arn}")
    assembly = cdk.synth(parts)
    echo(f"synthesized {assembly}")
    for line in summary:
        echo(line)
    statuses = []
    for part in parts:
        echo(f"{part.kind}: cdk deploy {' '.join(part.stacks)}")
        cdk.deploy(part.stacks)
        if wait:
            echo(f"{part.kind}: waiting (a check every {config.wait_delay_s:g} s)")
            status = part.wait(aws)
        else:
            status = part.status(aws)
        echo(str(status))
        statuses.append(status)
    return statuses


def destroy_parts(config: DeployConfig, parts: Sequence[Part], aws: Aws, *, echo: Echo = print) -> str:
    identity = require_identity(aws)
    echo(f"destroying in account {identity.account} in {identity.region}")
    notice = destroy(config, parts, aws, identity, echo)
    echo(notice)
    return notice


def status_of(config: DeployConfig, parts: Sequence[Part], aws: Aws) -> list[Status]:
    require_identity(aws)
    return [part.status(aws) for part in parts]
