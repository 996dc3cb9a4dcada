"""Deploy and destroy in the right order, with every check up front and a status at the end.

Deploy: check prerequisites (all of them, one report) -> synthesize -> for each part in order (speech,
then agent): `cdk deploy` its stacks, then wait until the endpoint is InService / the runtime READY.
Destroy goes through the parts backwards (see `deploy.teardown`).
"""

from __future__ import annotations

from collections.abc import Sequence

from deploy.aws import Aws
from deploy.config import DeployConfig
from deploy.part import Part
from deploy.prereqs import require_identity
from deploy.status import Status
from deploy.toolkit import Echo, Toolkit


def deploy_parts(
    config: DeployConfig,
    parts: Sequence[Part],
    aws: Aws,
    toolkit: Toolkit,
    *,
    wait: bool = True,
    echo: Echo = print,
) -> list[Status]:
    """The toolkit checks its prerequisites (AWS's, or the emulator's), synthesizes and applies."""
    summary = [line for part in parts for line in part.summary()]  # refuses an image its AMI cannot run
    identity = toolkit.check(config, aws, parts)
    echo(f"deploying to account {identity.account} in {identity.region} as {identity.arn}")
    assembly = toolkit.synth(parts)
    echo(f"synthesized {assembly}")
    for line in summary:
        echo(line)
    statuses = []
    for part in parts:
        echo(f"{part.kind}: cdk deploy {' '.join(part.stacks)}")
        toolkit.deploy(part.stacks)
        if wait:
            echo(f"{part.kind}: waiting (a check every {config.wait_delay_s:g} s)")
            status = part.wait(aws)
        else:
            status = part.status(aws)
        echo(str(status))
        statuses.append(status)
    return statuses


def destroy_parts(
    config: DeployConfig, parts: Sequence[Part], aws: Aws, toolkit: Toolkit, *, echo: Echo = print
) -> str:
    identity = require_identity(aws)
    echo(f"destroying in account {identity.account} in {identity.region}")
    notice = toolkit.destroy(parts, aws, identity, echo)
    echo(notice)
    return notice


def status_of(config: DeployConfig, parts: Sequence[Part], aws: Aws) -> list[Status]:
    require_identity(aws)
    return [part.status(aws) for part in parts]
