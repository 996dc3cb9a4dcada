"""The router honours a variant's `RoutingConfig` as SageMaker does: RANDOM (the default) any ready
replica, LEAST_OUTSTANDING_REQUESTS the one with the fewest invocations and sessions in flight."""

from collections import Counter
from pathlib import Path

import pytest

from emulator.controller.routing import Router
from emulator.controller.store import Deployment, Endpoint, Store, new_deployment
from emulator.services.sagemaker.shapes import parse_endpoint_config, parse_model
from emulator.wire.awserrors import AwsError

MODEL = {"ModelName": "m", "PrimaryContainer": {"Image": "img"}}


def endpoint(tmp_path: Path, routing: dict | None, count: int = 3) -> tuple[Router, Deployment]:
    model = parse_model(MODEL, "us-east-1", "123456789012")
    variant = {
        "VariantName": "v",
        "ModelName": "m",
        "InstanceType": "ml.g5.xlarge",
        "InitialInstanceCount": count,
    }
    if routing is not None:
        variant["RoutingConfig"] = routing
    config = parse_endpoint_config(
        {"EndpointConfigName": "c", "ProductionVariants": [variant]},
        "us-east-1",
        "123456789012",
        {"m": model},
    )
    deployment = new_deployment(config, {"m": model}, "e", tmp_path)
    for replica in deployment.replicas():
        replica.ready = True
    store = Store()
    store.endpoints["e"] = Endpoint("e", "arn", "c", status="InService", current=deployment)
    return Router(store, "123456789012"), deployment


def test_least_outstanding_requests_sends_each_new_session_to_the_least_busy_replica(tmp_path):
    router, deployment = endpoint(tmp_path, {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"})
    leases = [router.route("e", None).lease() for _ in range(6)]
    assert sorted(r.sessions for r in deployment.replicas()) == [2, 2, 2], "spread evenly"
    busy = next(iter(deployment.replicas()))
    busy.sessions += 5
    picked = {router.route("e", None).replica.id for _ in range(10)}
    assert busy.id not in picked, "never the replica with most in flight"
    for lease in leases:
        lease.release()


def test_random_is_the_default_and_ignores_the_load(tmp_path):
    router, deployment = endpoint(tmp_path, None)
    busy = next(iter(deployment.replicas()))
    busy.sessions = 50
    picks = Counter(router.route("e", None).replica.id for _ in range(300))
    assert picks[busy.id] > 30, ("RANDOM picks the busy replica too", picks)


def test_an_unknown_strategy_is_a_validation_error(tmp_path):
    with pytest.raises(AwsError) as error:
        endpoint(tmp_path, {"RoutingStrategy": "FASTEST"})
    assert error.value.code == "ValidationException" and "RoutingStrategy" in str(error.value)
