"""SageMaker control-plane requests: the fields boto3's create_* calls send, checked and typed into the
resources the controller's store keeps.

The same parsers serve the awsJson1.1 API and the YAML manifests, so a manifest `spec` is exactly a
create_* request. Bad input raises `AwsError("ValidationException", ...)`, which is what SageMaker
answers and what botocore raises as `ClientError`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from emulator.controller.store import RANDOM, ROUTING_STRATEGIES, EndpointConfig, Model, Variant
from emulator.services.sagemaker.errors import validation

NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
ENV_KEY_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def arn(region: str, account: str, kind: str, name: str) -> str:
    return f"arn:aws:sagemaker:{region}:{account}:{kind}/{name.lower()}"


def require_name(body: Mapping[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise validation(
            f"1 validation error detected: Value null at '{_camel(field)}' failed to satisfy constraint: "
            "Member must not be null"
        )
    if not NAME_RE.match(value):
        raise validation(
            f"1 validation error detected: Value '{value}' at '{_camel(field)}' "
            "failed to satisfy constraint: "
            f"Member must satisfy regular expression pattern: {NAME_RE.pattern}"
        )
    return value


def _camel(field: str) -> str:
    return field[:1].lower() + field[1:]


def _environment(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise validation("Environment must be a map of strings")
    if len(raw) > 100:
        raise validation("Environment can hold at most 100 entries")
    env: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not ENV_KEY_RE.match(key) or len(key) > 1024:
            raise validation(
                f"Environment key {key!r} must match {ENV_KEY_RE.pattern} (at most 1024 characters)"
            )
        if not isinstance(value, str) or len(value) > 1024:
            raise validation(f"Environment value of {key} must be a string of at most 1024 characters")
        env[key] = value
    return env


def _model_data(container: Mapping[str, Any]) -> str | None:
    url = container.get("ModelDataUrl")
    source = container.get("ModelDataSource")
    if url is not None and source is not None:
        raise validation("Specify either ModelDataUrl or ModelDataSource, not both")
    if url is not None:
        if not isinstance(url, str):
            raise validation("ModelDataUrl must be a string")
        return url
    if source is None:
        return None
    s3 = source.get("S3DataSource") if isinstance(source, Mapping) else None
    uri = s3.get("S3Uri") if isinstance(s3, Mapping) else None
    if not isinstance(uri, str):
        raise validation("ModelDataSource needs S3DataSource.S3Uri")
    return uri


def parse_model(body: Mapping[str, Any], region: str, account: str) -> Model:
    name = require_name(body, "ModelName")
    containers = body.get("Containers")
    primary = body.get("PrimaryContainer")
    if primary is None and isinstance(containers, list) and containers:
        if len(containers) > 1:
            raise validation("multi-container models (inference pipelines) are not emulated")
        primary = containers[0]
    if not isinstance(primary, Mapping):
        raise validation("CreateModel needs PrimaryContainer (or one entry in Containers)")
    image = primary.get("Image")
    if not isinstance(image, str) or not image:
        raise validation("PrimaryContainer.Image is required (model packages are not emulated)")
    return Model(
        name=name,
        arn=arn(region, account, "model", name),
        image=image,
        environment=_environment(primary.get("Environment")),
        model_data=_model_data(primary),
        created=time.time(),
        request=dict(body),
    )


def _variant(raw: Any, index: int) -> Variant:
    if not isinstance(raw, Mapping):
        raise validation(f"ProductionVariants[{index}] must be an object")
    name = require_name(raw, "VariantName")
    model_name = require_name(raw, "ModelName")
    serverless = raw.get("ServerlessConfig")
    instance_type = raw.get("InstanceType")
    if instance_type is None and serverless is None:
        raise validation(f"Variant {name} needs InstanceType (or ServerlessConfig)")
    count = raw.get("InitialInstanceCount", 1)
    weight = raw.get("InitialVariantWeight", 1.0)
    timeout = raw.get("ContainerStartupHealthCheckTimeoutInSeconds")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise validation(f"Variant {name}: InitialInstanceCount must be an integer >= 1")
    if not isinstance(weight, int | float) or weight < 0:
        raise validation(f"Variant {name}: InitialVariantWeight must be a number >= 0")
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
        raise validation(f"Variant {name}: ContainerStartupHealthCheckTimeoutInSeconds must be > 0")
    routing = raw.get("RoutingConfig") or {}
    strategy = routing.get("RoutingStrategy", RANDOM) if isinstance(routing, Mapping) else None
    if strategy not in ROUTING_STRATEGIES:
        raise validation(
            f"Variant {name}: RoutingConfig.RoutingStrategy must be one of {', '.join(ROUTING_STRATEGIES)}"
        )
    return Variant(
        name=name,
        model_name=model_name,
        instance_type=str(instance_type or "serverless"),
        instance_count=count if serverless is None else 1,
        weight=float(weight),
        startup_timeout_s=float(timeout) if timeout is not None else None,
        request=dict(raw),
        routing=str(strategy),
    )


def parse_endpoint_config(
    body: Mapping[str, Any], region: str, account: str, models: Mapping[str, Model]
) -> EndpointConfig:
    name = require_name(body, "EndpointConfigName")
    raw_variants = body.get("ProductionVariants")
    if not isinstance(raw_variants, list) or not raw_variants:
        raise validation("ProductionVariants must hold at least one variant")
    variants = tuple(_variant(raw, i) for i, raw in enumerate(raw_variants))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise validation("VariantName values must be unique within an endpoint configuration")
    for variant in variants:
        if variant.model_name not in models:
            raise validation(f'Could not find model "{arn(region, account, "model", variant.model_name)}".')
    return EndpointConfig(
        name=name,
        arn=arn(region, account, "endpoint-config", name),
        variants=variants,
        created=time.time(),
        request=dict(body),
    )
