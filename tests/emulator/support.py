"""Shared pieces for the emulator tests: fast configs, manifests of test containers, the official
HTTP/2 client pointed at an emulator, and process checks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import httpx
from aws_sdk_sagemaker_runtime_http2.client import AsyncSageMakerRuntimeHTTP2Client
from aws_sdk_sagemaker_runtime_http2.models import (
    InvokeEndpointWithBidirectionalStreamInput,
    RequestPayloadPart,
    RequestStreamEventPayloadPart,
    ResponsePayloadPart,
)
from smithy_aws_core.identity import AWSCredentialsIdentity

from agent.config import AgentConfig
from agent.sagemaker_client import bidirectional_client
from emulator.config import EmulatorConfig
from emulator.manifest import Manifest
from emulator.server import Emulator

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXT_ONLY_COMMAND = ["{python}", str(FIXTURES / "text_only_container.py"), "--port", "{port}"]


def fast_config(home: Path, **overrides: Any) -> EmulatorConfig:
    """Free ports, quick reconcile passes and short grace periods."""
    values: dict[str, Any] = {
        "http_port": 0,
        "h2_port": 0,
        "home": home,
        "reconcile_interval_s": 0.1,
        "stop_grace_s": 2.0,
        "end_of_input_grace_s": 1.0,
        "startup_timeout_s": 60.0,
        "llm_backend": "script",  # these tests do not ask Bedrock: no model loading in the background
    }
    return EmulatorConfig(**{**values, **overrides})


def model(name: str, image: str, **container: Any) -> dict[str, Any]:
    return {"kind": "Model", "spec": {"ModelName": name, "PrimaryContainer": {"Image": image, **container}}}


def endpoint(name: str, variants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An EndpointConfig and an Endpoint of the same name."""
    return [
        {"kind": "EndpointConfig", "spec": {"EndpointConfigName": name, "ProductionVariants": variants}},
        {"kind": "Endpoint", "spec": {"EndpointName": name, "EndpointConfigName": name}},
    ]


def variant(name: str, model_name: str, count: int = 1, weight: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {
        "VariantName": name,
        "ModelName": model_name,
        "InstanceType": "ml.g5.xlarge",
        "InitialInstanceCount": count,
        "InitialVariantWeight": weight,
        **extra,
    }


def manifest(resources: list[dict[str, Any]], images: dict[str, Any] | None = None) -> Manifest:
    return Manifest.from_obj({"resources": resources, "images": images or {}})


def boto_client(
    emu: Emulator,
    service: str,
    *,
    validate: bool = True,
    path: str = "",
    config: dict[str, Any] | None = None,
    **credentials: str,
) -> Any:
    """A boto3 client for the emulator (`validate=False` skips botocore's client-side limits), at
    `path` under it (the awsQuery services' own), with more of botocore's `config`."""
    env = emu.env
    return boto3.client(
        service,
        endpoint_url=emu.http_url + path,
        region_name=env["AWS_REGION"],
        aws_access_key_id=credentials.get("key", env["AWS_ACCESS_KEY_ID"]),
        aws_secret_access_key=credentials.get("secret", env["AWS_SECRET_ACCESS_KEY"]),
        config=botocore.config.Config(parameter_validation=validate, **(config or {})),
    )


async def bidi_client(
    emu: Emulator, key: str = "test", secret: str = "test"
) -> AsyncSageMakerRuntimeHTTP2Client:
    """The official client with the project's CA-trusting CRT transport, as the agent builds it."""
    config = AgentConfig(
        region=emu.config.region, sagemaker_http2_endpoint=emu.h2_url, ca_bundle=str(emu.tls.ca)
    )
    return await bidirectional_client(
        config, AWSCredentialsIdentity(access_key_id=key, secret_access_key=secret)
    )


def part(
    data: bytes, data_type: str | None = None, state: str | None = None
) -> RequestStreamEventPayloadPart:
    return RequestStreamEventPayloadPart(
        value=RequestPayloadPart(bytes_=data, data_type=data_type, completion_state=state)
    )


async def open_stream(client: AsyncSageMakerRuntimeHTTP2Client, name: str, **options: str):
    return await client.invoke_endpoint_with_bidirectional_stream(
        InvokeEndpointWithBidirectionalStreamInput(endpoint_name=name, **options)
    )


async def next_part(events: Any, within_s: float = 10.0) -> ResponsePayloadPart | None:
    """The next PayloadPart (None at the end of the stream); modeled error events are raised."""
    async with asyncio.timeout(within_s):
        event = await events.receive()
    return None if event is None else event.value


def status(emu: Emulator) -> dict[str, Any]:
    return httpx.get(f"{emu.http_url}/_emulator/status", timeout=5, trust_env=False).json()


def replicas(emu: Emulator, endpoint_name: str) -> list[dict[str, Any]]:
    for ep in status(emu)["endpoints"]:
        if ep["name"] == endpoint_name:
            return ep["replicas"]
    return []


def process_gone(pid: int) -> bool:
    """True when neither the process nor its process group exist any more."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return not Path(f"/proc/{pid}").exists()
    return False
