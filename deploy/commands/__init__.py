"""The command lines: `speech-infra` (`speech.py`), `agent-infra` (`agent.py`) and `python -m deploy`
(`deploy/__main__.py`), with their shared flags in `flags.py`.

What they share besides flags is here: one action per command (`act`) and one error rule (`run`: a
`DeployError` prints its message and exits 2; no traceback for problems the user can fix).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from deploy.aws import Aws
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.errors import DeployError
from deploy.orchestrate import deploy_parts, destroy_parts, status_of
from deploy.part import Part
from deploy.prereqs import check_prerequisites
from deploy.rehearsal import LocalToolkit
from deploy.status import Status


def clients(config: DeployConfig) -> Aws:
    return Aws(region=config.region)


def toolkit(config: DeployConfig) -> CdkToolkit:
    return CdkToolkit(config)


def print_statuses(statuses: Sequence[Status]) -> int:
    for status in statuses:
        print(status)
    return 0 if all(status.ready for status in statuses) else 1


def act(
    action: str,
    config: DeployConfig,
    parts: Sequence[Part],
    no_wait: bool = False,
    status_parts: Sequence[Part] | None = None,
) -> int:
    """deploy (in order, waiting unless `no_wait`), destroy (in reverse) or report the status of `parts`,
    on AWS or, with `--target local`, on the emulator (`deploy.rehearsal`: the only calls that differ)."""
    if config.target == "local":
        local = LocalToolkit(config)
        aws, cdk, check = local.aws, local, local.check
    else:
        aws, cdk, check = clients(config), toolkit(config), check_prerequisites
    if action in {"aws", "deploy"}:
        statuses = deploy_parts(config, parts, aws, cdk, wait=not no_wait, check=check)
        return 0 if no_wait or all(status.ready for status in statuses) else 1
    if action == "destroy":
        if config.target == "local":
            print(local.destroy(parts))
        else:
            destroy_parts(config, parts, aws)
        return 0
    return print_statuses(status_of(config, status_parts or parts, aws))


def run(command: Callable[[], int]) -> int:
    try:
        return command()
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
