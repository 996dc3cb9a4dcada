"""The SageMaker control plane (awsJson1.1: `POST /`, `X-Amz-Target: SageMaker.<Operation>`).

`SageMakerControl` holds the operations as plain methods (dict in, dict out) so the YAML manifests go
through exactly the code boto3 reaches; `routes.py` binds them to awsJson1.1. Creating or changing an
endpoint only records desired state and wakes the controller, as in SageMaker: CreateEndpoint returns
at once with the endpoint `Creating`.
"""

from __future__ import annotations

import time
from typing import Any

from emulator.config import EmulatorConfig
from emulator.controller import modeldata
from emulator.controller.reconcile import Controller
from emulator.controller.runtimes import Runtime, RuntimeUnavailable
from emulator.controller.store import Deployment, Endpoint, Model, Store, new_deployment
from emulator.services.sagemaker.errors import validation
from emulator.services.sagemaker.shapes import arn, parse_endpoint_config, parse_model, require_name
from emulator.wire.awsjson import Operation


class SageMakerControl:
    def __init__(
        self, config: EmulatorConfig, store: Store, runtime: Runtime, controller: Controller
    ) -> None:
        self.config = config
        self.store = store
        self.runtime = runtime
        self.controller = controller

    def operations(self) -> dict[str, Operation]:
        return {
            name: getattr(self, name)
            for name in (
                "CreateModel",
                "DescribeModel",
                "DeleteModel",
                "ListModels",
                "CreateEndpointConfig",
                "DescribeEndpointConfig",
                "DeleteEndpointConfig",
                "ListEndpointConfigs",
                "CreateEndpoint",
                "DescribeEndpoint",
                "UpdateEndpoint",
                "DeleteEndpoint",
                "ListEndpoints",
            )
        }

    def _arn(self, kind: str, name: str) -> str:
        return arn(self.config.region, self.config.account_id, kind, name)

    # models ---------------------------------------------------------------------------------------

    def CreateModel(self, body: dict[str, Any]) -> dict[str, Any]:
        model = parse_model(body, self.config.region, self.config.account_id)
        if model.name in self.store.models:
            raise validation(f'Cannot create already existing model "{model.arn}".')
        try:
            self.runtime.check_image(model.image)
        except RuntimeUnavailable as exc:
            raise validation(str(exc)) from exc
        if model.model_data:
            try:
                modeldata.local_path(model.model_data)
            except modeldata.ModelDataError as exc:
                raise validation(str(exc)) from exc
        self.store.models[model.name] = model
        self.store.events.add("Normal", "ModelCreated", model.name, model.image)
        return {"ModelArn": model.arn}

    def _model(self, body: dict[str, Any]) -> Model:
        name = require_name(body, "ModelName")
        model = self.store.models.get(name)
        if model is None:
            raise validation(f'Could not find model "{self._arn("model", name)}".')
        return model

    def DescribeModel(self, body: dict[str, Any]) -> dict[str, Any]:
        model = self._model(body)
        request_fields = model.request
        primary = request_fields.get("PrimaryContainer") or (request_fields.get("Containers") or [{}])[0]
        out = {
            "ModelName": model.name,
            "PrimaryContainer": primary,
            "CreationTime": model.created,
            "ModelArn": model.arn,
            "EnableNetworkIsolation": bool(request_fields.get("EnableNetworkIsolation", False)),
        }
        if "ExecutionRoleArn" in request_fields:
            out["ExecutionRoleArn"] = request_fields["ExecutionRoleArn"]
        return out

    def DeleteModel(self, body: dict[str, Any]) -> dict[str, Any]:
        model = self._model(body)
        del self.store.models[model.name]
        return {}

    def ListModels(self, body: dict[str, Any]) -> dict[str, Any]:
        contains = str(body.get("NameContains") or "")
        return {
            "Models": [
                {"ModelName": m.name, "ModelArn": m.arn, "CreationTime": m.created}
                for m in self.store.models.values()
                if contains in m.name
            ]
        }

    # endpoint configs -----------------------------------------------------------------------------

    def CreateEndpointConfig(self, body: dict[str, Any]) -> dict[str, Any]:
        config = parse_endpoint_config(body, self.config.region, self.config.account_id, self.store.models)
        if config.name in self.store.configs:
            raise validation(f'Cannot create already existing endpoint configuration "{config.arn}".')
        self.store.configs[config.name] = config
        return {"EndpointConfigArn": config.arn}

    def _endpoint_config(self, body: dict[str, Any]):
        name = require_name(body, "EndpointConfigName")
        config = self.store.configs.get(name)
        if config is None:
            raise validation(f'Could not find endpoint configuration "{self._arn("endpoint-config", name)}".')
        return config

    def DescribeEndpointConfig(self, body: dict[str, Any]) -> dict[str, Any]:
        config = self._endpoint_config(body)
        return {
            "EndpointConfigName": config.name,
            "EndpointConfigArn": config.arn,
            "ProductionVariants": [v.request for v in config.variants],
            "CreationTime": config.created,
        }

    def DeleteEndpointConfig(self, body: dict[str, Any]) -> dict[str, Any]:
        config = self._endpoint_config(body)
        del self.store.configs[config.name]
        return {}

    def ListEndpointConfigs(self, body: dict[str, Any]) -> dict[str, Any]:
        contains = str(body.get("NameContains") or "")
        return {
            "EndpointConfigs": [
                {"EndpointConfigName": c.name, "EndpointConfigArn": c.arn, "CreationTime": c.created}
                for c in self.store.configs.values()
                if contains in c.name
            ]
        }

    # endpoints ------------------------------------------------------------------------------------

    def _deployment(self, endpoint_name: str, body: dict[str, Any]) -> Deployment:
        config = self._endpoint_config(body)
        missing = [v.model_name for v in config.variants if v.model_name not in self.store.models]
        if missing:
            raise validation(f'Could not find model "{self._arn("model", missing[0])}".')
        return new_deployment(config, self.store.models, endpoint_name, self.config.home_dir / "logs")

    def CreateEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        name = require_name(body, "EndpointName")
        endpoint_arn = self._arn("endpoint", name)
        if name in self.store.endpoints:
            raise validation(f'Cannot create already existing endpoint "{endpoint_arn}".')
        deployment = self._deployment(name, body)
        endpoint = Endpoint(
            name=name, arn=endpoint_arn, config_name=deployment.config.name, pending=deployment
        )
        self.store.endpoints[name] = endpoint
        self.store.events.add("Normal", "Creating", name, f"endpoint config {deployment.config.name}")
        self.controller.wake()
        return {"EndpointArn": endpoint_arn}

    def _endpoint(self, body: dict[str, Any]) -> Endpoint:
        name = require_name(body, "EndpointName")
        endpoint = self.store.endpoints.get(name)
        if endpoint is None:
            raise validation(f'Could not find endpoint "{self._arn("endpoint", name)}".')
        return endpoint

    def DescribeEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        ep = self._endpoint(body)
        out: dict[str, Any] = {
            "EndpointName": ep.name,
            "EndpointArn": ep.arn,
            "EndpointConfigName": ep.config_name,
            "EndpointStatus": ep.status,
            "CreationTime": ep.created,
            "LastModifiedTime": ep.modified,
        }
        if ep.current is not None:
            out["ProductionVariants"] = _variant_summaries(ep.current)
        if ep.failure_reason:
            out["FailureReason"] = ep.failure_reason
        if ep.pending is not None and ep.current is not None:
            out["PendingDeploymentSummary"] = {
                "EndpointConfigName": ep.pending.config.name,
                "ProductionVariants": _variant_summaries(ep.pending),
                "StartTime": time.time() - (time.monotonic() - ep.pending.started),
            }
        return out

    def UpdateEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        ep = self._endpoint(body)
        if ep.status != "InService":
            raise validation(
                f'Cannot update in-progress endpoint "{ep.arn}".'
                if ep.status != "Failed"
                else f'Cannot update failed endpoint "{ep.arn}".'
            )
        ep.pending = self._deployment(ep.name, body)
        ep.status = "Updating"
        ep.failure_reason = None
        ep.modified = time.time()
        self.store.events.add("Normal", "Updating", ep.name, f"to endpoint config {ep.pending.config.name}")
        self.controller.wake()
        return {"EndpointArn": ep.arn}

    def DeleteEndpoint(self, body: dict[str, Any]) -> dict[str, Any]:
        ep = self._endpoint(body)
        if ep.status != "Deleting":
            ep.status = "Deleting"
            ep.modified = time.time()
            self.store.events.add("Normal", "Deleting", ep.name, "stopping replicas")
            self.controller.wake()
        return {}

    def ListEndpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        contains = str(body.get("NameContains") or "")
        status = body.get("StatusEquals")
        return {
            "Endpoints": [
                {
                    "EndpointName": ep.name,
                    "EndpointArn": ep.arn,
                    "CreationTime": ep.created,
                    "LastModifiedTime": ep.modified,
                    "EndpointStatus": ep.status,
                }
                for ep in self.store.endpoints.values()
                if contains in ep.name and (status is None or ep.status == status)
            ]
        }


def _variant_summaries(deployment: Deployment) -> list[dict[str, Any]]:
    summaries = []
    for deployed in deployment.variants.values():
        variant = deployed.variant
        summaries.append(
            {
                "VariantName": variant.name,
                "DeployedImages": [
                    {
                        "SpecifiedImage": deployed.model.image,
                        "ResolvedImage": deployed.model.image,
                        "ResolutionTime": deployed.model.created,
                    }
                ],
                "CurrentWeight": variant.weight,
                "DesiredWeight": variant.weight,
                "CurrentInstanceCount": sum(1 for r in deployed.replicas if r.ready),
                "DesiredInstanceCount": variant.instance_count,
            }
        )
    return summaries
