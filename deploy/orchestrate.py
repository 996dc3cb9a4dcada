"""Which parts a command acts on, where their stacks go, and deploy, destroy and status in the right
order, with every check up front and a status at the end.

Deploy: check prerequisites (all of them, one report) -> synthesize -> for each part in order (the
endpoints, then the agent's runtime): apply its stacks, then wait until the endpoint is InService / the
runtime READY. Destroy goes through the parts backwards (see `deploy.teardown`). `target` is the one
place the targets differ: the toolkit that receives the template and the clients' endpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deploy.aws import Aws
from deploy.cdk_toolkit import CdkToolkit
from deploy.config import DeployConfig
from deploy.local_toolkit import LocalToolkit, emulator_variables
from deploy.parts.agent_runtime import AgentRuntimePart
from deploy.parts.base import Part
from deploy.parts.endpoint import EndpointPart
from deploy.prereqs import require_identity
from deploy.status import Status
from deploy.toolkit import Echo, Toolkit


def product_parts(config: DeployConfig, *, listening: bool | None = None) -> tuple[Part, ...]:
    """Every part of the product, in deploy order: the endpoints first (the agent speaks and listens
    through them, so it goes up after them and down before them). `listening` (default: `config.listen`)
    includes the speech-to-text endpoint, a second GPU instance deployed on request."""
    endpoints: tuple[Part, ...] = (EndpointPart(config, config.speech_endpoint),)
    if config.listen if listening is None else listening:
        endpoints += (EndpointPart(config, config.listening_endpoint),)
    return *endpoints, AgentRuntimePart(config)


def parts_of(
    config: DeployConfig, names: Iterable[str], *, listening: bool | None = None
) -> tuple[Part, ...]:
    """The parts `names` names (names of the product's parts), in deploy order; none named: every part
    (`product_parts`)."""
    named = set(names)
    if not named:
        return product_parts(config, listening=listening)
    return tuple(part for part in product_parts(config, listening=True) if part.name in named)


def with_what_they_use(config: DeployConfig, parts: Sequence[Part]) -> tuple[Part, ...]:
    """`parts`, then the parts they work through that are not among them (the agent's endpoints), as
    the status of a part reports them."""
    named = {part.name for part in parts}
    used = [name for part in parts for name in part.uses() if name not in named]
    return (*parts, *parts_of(config, dict.fromkeys(used))) if used else tuple(parts)


def target(config: DeployConfig) -> tuple[Aws, Toolkit]:
    """The clients and the toolkit for `config.target`: AWS through the CDK, or (`local`) the emulator
    its variables point at, the same assembly applied there."""
    if config.target == "local":
        variables = emulator_variables()
        aws = Aws.from_variables({**variables, **({"AWS_REGION": config.region} if config.region else {})})
        return aws, LocalToolkit(config, aws)
    return Aws(region=config.region), CdkToolkit(config)


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
        echo(f"{part.name}: deploying {' '.join(part.stacks)}")
        toolkit.deploy(part.stacks)
        if wait:
            echo(f"{part.name}: waiting (a check every {config.wait_delay_s:g} s)")
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


def act(command: str, config: DeployConfig, parts: Sequence[Part], *, wait: bool = True) -> int:
    """deploy (in order, waiting unless told not to), destroy (in reverse) or report the status of
    `parts` (and of what they use), wherever `config.target` says; the command's exit code."""
    aws, toolkit = target(config)
    if command == "deploy":
        statuses = deploy_parts(config, parts, aws, toolkit, wait=wait)
        return 0 if not wait or all(status.ready for status in statuses) else 1
    if command == "destroy":
        destroy_parts(config, parts, aws, toolkit)
        return 0
    statuses = status_of(config, with_what_they_use(config, parts), aws)
    for status in statuses:
        print(status)
    return 0 if all(status.ready for status in statuses) else 1
