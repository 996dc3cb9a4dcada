"""The Quart app: every emulated service's routes on one ASGI app, and the services wired together.

The same app serves both listeners (plain HTTP/1.1 and TLS h2); clients pick the service by URL:
`POST /` + `X-Amz-Target` is awsJson1.1 (the SageMaker control plane and Application Auto Scaling,
recorded, not applied), `/endpoints/<name>/invocations*` the SageMaker runtime and its bidirectional
stream, `/model/<id>/converse*` Bedrock Runtime, `/runtimes/...` Bedrock AgentCore (control plane,
and `/runtimes/<ARN>/invocations` its data plane), `/sts/` STS, `/cloudformation/` CloudFormation,
CloudWatch awsJson1.0 on the same `POST /`, `/_emulator/...` the operator's routes (emulator/admin/,
not AWS). SigV4 (when keys are configured) is checked once for every AWS route, before it runs
(emulator.wire.auth).

`make_services` builds each service over the one store and gives CloudFormation the one way it reaches
the others: `Services.call(service, operation, request)` and `Services.offers(service)`, over the
operation tables the services' control planes return (boto3's service names; the API's operation
names), so no service imports another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException

from emulator.admin.routes import admin_blueprint
from emulator.admin.traces import Traces
from emulator.config import EmulatorConfig
from emulator.controller.reconcile import Controller
from emulator.controller.routing import Router
from emulator.controller.runtimes import Runtime
from emulator.controller.store import Store
from emulator.images.assets import DockerImageAssets
from emulator.llm import reply_model_from_config
from emulator.llm.base import ReplyModel
from emulator.services.agentcore import routes as agentcore_routes
from emulator.services.agentcore.control import AgentCoreControl
from emulator.services.autoscaling import routes as autoscaling_routes
from emulator.services.autoscaling.control import AutoScalingControl
from emulator.services.bedrock import routes as bedrock_routes
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.cloudformation import routes as cloudformation_routes
from emulator.services.cloudformation.control import CloudFormationControl
from emulator.services.cloudwatch import routes as cloudwatch_routes
from emulator.services.cloudwatch.control import CloudWatchControl
from emulator.services.cloudwatch.runtime import LogMetrics, Metrics
from emulator.services.sagemaker import routes as sagemaker_routes
from emulator.services.sagemaker.control import SageMakerControl
from emulator.services.sts import routes as sts_routes
from emulator.services.sts.control import StsControl
from emulator.wire import auth, bodies
from emulator.wire.awserrors import AwsError, json_protocol_error
from emulator.wire.awsjson import Operation, aws_json_blueprint

logger = logging.getLogger("emulator.server.app")


@dataclass
class Services:
    config: EmulatorConfig
    store: Store
    runtime: Runtime
    router: Router
    http: httpx.AsyncClient
    info: Callable[[], dict[str, Any]]
    sagemaker: SageMakerControl
    agentcore: AgentCoreControl
    autoscaling: AutoScalingControl
    sts: StsControl
    cloudformation: CloudFormationControl = field(init=False)
    cloudwatch: CloudWatchControl = field(init=False)
    bedrock_requests: RequestLog = field(default_factory=RequestLog)
    traces: Traces = field(default_factory=Traces)
    reply_model: ReplyModel = field(init=False)
    """The model behind Bedrock: one for the routes and the preload."""
    _preload: asyncio.Task[None] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        images = DockerImageAssets(self.config.base_image)
        self.cloudformation = CloudFormationControl(self.config, self.store, self, images)
        self.cloudwatch = CloudWatchControl(Metrics(), self.config.region, self.config.account_id)
        self.reply_model = reply_model_from_config(self.config)

    def replica_metrics(self) -> LogMetrics:
        """What stores the EMF lines of every replica's log (emulator.server runs it)."""
        return LogMetrics(self.config.home_dir / "logs", self.cloudwatch.metrics)

    def preload_reply_model(self) -> None:
        """Load the local model behind Bedrock in the background (once; a model that needs no load
        ignores it) when an agent runtime is created, the manifest's or a later one (the deploy
        rehearsal creates its runtime after `emulator up`), so that an agent's first question never waits
        for the load. Called on the event loop.

        The load waits while an endpoint's replica starts (at most the replicas' start limit). Here they
        share the cores, and a replica times its speech engine as it starts and plans every listener's
        windows from those figures: on 2 cores with AVX2 only, beside the model's load, one measured its
        decoder at 16.8 ms a frame instead of 7.2 and its text side at 3.9 ms a token instead of 0.8,
        claimed one session and held the demo's first audio back. In the cloud, Bedrock's model never
        runs on the endpoint's machine."""
        load = getattr(self.reply_model, "load", None)
        if self._preload is None and callable(load):
            self._preload = asyncio.get_running_loop().create_task(self._load_after_endpoints(load))

    async def _load_after_endpoints(self, load: Callable[[], object]) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        while True:  # the replicas' state is the controller's to change: read it as it polls them
            if not self.sagemaker.controller.endpoint_replicas_starting() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        try:
            await asyncio.to_thread(load)
        except Exception as exc:  # the request that needs the model reports it again, typed
            logger.warning("the local model behind Bedrock did not load: %s", exc)

    async def reply_model_loaded(self, limit_s: float) -> None:
        """Wait for the preload, when one started, at most `limit_s` (a first use that builds the model
        may take longer: the first question then waits for the rest)."""
        if self._preload is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._preload), limit_s)

    def operations(self) -> Mapping[str, Mapping[str, Operation]]:
        """Every control plane's operations, by boto3's service name."""
        return {
            "sagemaker": self.sagemaker.operations(),
            "application-autoscaling": self.autoscaling.operations(),
            "bedrock-agentcore-control": self.agentcore.operations(),
            "sts": self.sts.operations(),
            "cloudformation": self.cloudformation.operations(),
            "cloudwatch": self.cloudwatch.operations(),
        }

    def call(self, service: str, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        """One control-plane operation of one service, as its routes would call it."""
        return self.operations()[service][operation](body)

    def offers(self, service: str) -> bool:
        """Whether the emulator serves `service` (boto3's name): CloudFormation's CloudWatch resources
        go to it when it does."""
        return service in self.operations()


def make_services(
    config: EmulatorConfig,
    store: Store,
    runtime: Runtime,
    controller: Controller,
    http: httpx.AsyncClient,
    info: Callable[[], dict[str, Any]],
    platform_env: Mapping[str, str],
) -> Services:
    """Every service over the one store; `platform_env` is what AgentCore gives each runtime."""
    services = Services(
        config=config,
        store=store,
        runtime=runtime,
        router=Router(store, config.account_id),
        http=http,
        info=info,
        sagemaker=SageMakerControl(config, store, runtime, controller),
        agentcore=AgentCoreControl(
            store,
            controller,
            region=config.region,
            account_id=config.account_id,
            logs=config.home_dir / "logs",
            platform_env=platform_env,
            on_create=lambda: services.preload_reply_model(),
        ),
        autoscaling=AutoScalingControl(config, store),
        sts=StsControl(config),
    )
    return services


def create_app(services: Services) -> Quart:
    app = Quart("emulator")
    # Streams live as long as the client keeps them open; bodies are bounded per route (wire.bodies).
    app.config.update(BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None, MAX_CONTENT_LENGTH=None)
    auth.install(app, services.config)
    bodies.install(app)
    json_targets = {
        **sagemaker_routes.json_targets(services.sagemaker),
        **autoscaling_routes.json_targets(services.autoscaling),
        **cloudwatch_routes.json_targets(services.cloudwatch),
    }
    blueprints = [
        aws_json_blueprint(
            json_targets,
            models={
                sagemaker_routes.TARGET_PREFIX: sagemaker_routes.SERVICE_MODEL,
                autoscaling_routes.TARGET_PREFIX: autoscaling_routes.SERVICE_MODEL,
                cloudwatch_routes.TARGET_PREFIX: cloudwatch_routes.SERVICE_MODEL,
            },
        ),
        *sagemaker_routes.blueprints(services.config, services.router, services.runtime, services.http),
        *bedrock_routes.blueprints(services.config, services.bedrock_requests, model=services.reply_model),
        *agentcore_routes.blueprints(services.config, services.agentcore, services.http),
        *sts_routes.blueprints(services.sts),
        *cloudformation_routes.blueprints(services.cloudformation),
        admin_blueprint(
            services.store, services.info, services.bedrock_requests, services.cloudwatch, services.traces
        ),
    ]
    for blueprint in blueprints:
        app.register_blueprint(blueprint)
    _answer_the_rest_as_aws(app)
    return app


def _answer_the_rest_as_aws(app: Quart) -> None:
    """What no service's own envelope answers is still an AWS error, in the JSON envelope both
    botocore's JSON parsers read (code in `x-amzn-ErrorType` and `__type`): a path or method no service
    serves (`UnknownOperationException`, 404, as AWS answers one, `../admin` and the like included), a
    refused signature on such a path, and an unexpected failure (`InternalServerException`, 500),
    instead of Quart's HTML pages."""

    async def aws_error(err: AwsError) -> Response:
        return json_protocol_error(err)

    async def no_such_operation(err: HTTPException) -> Response:
        status = err.code or 404
        code = "UnknownOperationException" if status in (404, 405) else "ValidationException"
        message = f"{request.method} {request.path} is not an operation of this service"
        return json_protocol_error(AwsError(code, message, 404 if status == 405 else status))

    async def internal(err: Exception) -> Response:
        logger.exception("unexpected failure serving %s %s", request.method, request.path)
        return json_protocol_error(AwsError("InternalServerException", f"internal error: {err!r}", 500))

    app.register_error_handler(AwsError, aws_error)
    app.register_error_handler(HTTPException, no_such_operation)
    app.register_error_handler(Exception, internal)
