"""The command lines: `speech-infra` (`speech.py`), `agent-infra` (`agent.py`) and `python -m deploy`
(`deploy/__main__.py`), with their shared flags in `flags.py`.

What they share besides flags is here: where the stacks go (`target`: the one place the targets
differ, in the toolkit that receives the template and the clients' endpoints), one action per command
(`act`) and one error rule (`run`: a `DeployError` prints its message and exits 2; no traceback for
problems the user can fix).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from deploy.aws import Aws
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.errors import DeployError
from deploy.local_toolkit import LocalToolkit, emulator_variables
from deploy.orchestrate import deploy_parts, destroy_parts, status_of
from deploy.part import Part
from deploy.status import Status
from deploy.toolkit import Toolkit


def target(config: DeployConfig) -> tuple[Aws, Toolkit]:
    """The clients and the toolkit for `config.target`: AWS through the CDK, or (`local`) the emulator
    its variables point at, the same assembly applied there."""
    if config.target == "local":
        variables = emulator_variables()
        aws = Aws.from_variables({**variables, **({"AWS_REGION": config.region} if config.region else {})})
        return aws, LocalToolkit(config, aws)
    return Aws(region=config.region), CdkToolkit(config)


def toolkit(config: DeployConfig) -> CdkToolkit:
    """Synthesis alone (`python -m deploy synth`): the same for every target."""
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
    wherever `config.target` says (`target`)."""
    aws, toolkit = target(config)
    if action in {"aws", "deploy"}:
        statuses = deploy_parts(config, parts, aws, toolkit, wait=not no_wait)
        return 0 if no_wait or all(status.ready for status in statuses) else 1
    if action == "destroy":
        destroy_parts(config, parts, aws, toolkit)
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
