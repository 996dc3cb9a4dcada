"""The Quart app: every face of the emulator on one ASGI app.

The same app serves both listeners (plain HTTP/1.1 and TLS h2); clients pick the face by URL:
`POST /` + `X-Amz-Target` is the SageMaker control plane and Application Auto Scaling (recorded,
not applied), `/endpoints/<name>/invocations*` the
runtimes, `/model/<id>/converse*` Bedrock Runtime, `/runtimes/...` Bedrock AgentCore (control plane,
and `/runtimes/<ARN>/invocations` its data plane), `/sts/` STS GetCallerIdentity, `/cloudformation/`
the stacks of the agent runtimes, `/_emulator/status` the operator view. SigV4 (when keys
are configured) is checked once for every AWS face, before its route runs (emulator.wire.auth).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException

from emulator.admin import admin_blueprint
from emulator.agentcore.cloudformation import cloudformation_blueprint
from emulator.agentcore.faces import agentcore_control_blueprint, agentcore_runtime_blueprint
from emulator.agentcore.operations import AgentRuntimeControl
from emulator.agentcore.sts import sts_blueprint
from emulator.autoscaling.operations import TARGET_PREFIX, AutoScaling
from emulator.bedrock.converse import bedrock_blueprint
from emulator.config import EmulatorConfig
from emulator.controller.routing import Router
from emulator.controller.runtimes import Runtime
from emulator.controller.store import Store
from emulator.sagemaker.bidirectional import bidi_blueprint
from emulator.sagemaker.control_plane import ControlPlane
from emulator.sagemaker.invoke import classic_blueprint
from emulator.wire import auth
from emulator.wire.awserrors import AwsError, json_protocol_error
from emulator.wire.awsjson import aws_json_blueprint

logger = logging.getLogger("emulator.app")


@dataclass(frozen=True)
class Services:
    config: EmulatorConfig
    store: Store
    runtime: Runtime
    control_plane: ControlPlane
    agent_runtimes: AgentRuntimeControl
    router: Router
    http: httpx.AsyncClient
    info: Callable[[], dict[str, Any]]
    preload_llm: bool = True
    """Load the local model behind Bedrock at start (the manifest runs an agent that will call it)."""


def create_app(services: Services) -> Quart:
    app = Quart("emulator")
    # Streams live as long as the client keeps them open; bodies are bounded per face.
    app.config.update(BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None, MAX_CONTENT_LENGTH=None)
    auth.install(app, services.config)
    control_planes = {
        "SageMaker": services.control_plane.operations(),
        TARGET_PREFIX: AutoScaling(services.config, services.store).operations(),
    }
    app.register_blueprint(aws_json_blueprint(control_planes))
    app.register_blueprint(classic_blueprint(services.config, services.router, services.http))
    app.register_blueprint(bidi_blueprint(services.config, services.router, services.runtime))
    app.register_blueprint(bedrock_blueprint(services.config, preload=services.preload_llm))
    runtimes = services.agent_runtimes
    app.register_blueprint(agentcore_control_blueprint(services.config, runtimes))
    app.register_blueprint(agentcore_runtime_blueprint(services.config, runtimes, services.http))
    app.register_blueprint(sts_blueprint(services.config))
    app.register_blueprint(cloudformation_blueprint(services.config, runtimes))
    app.register_blueprint(admin_blueprint(services.store, services.info))
    _answer_the_rest_as_aws(app)
    return app


def _answer_the_rest_as_aws(app: Quart) -> None:
    """What no face's own envelope answers is still an AWS error, in the JSON envelope both botocore's
    JSON parsers read (code in `x-amzn-ErrorType` and `__type`): a path or method no face serves
    (`UnknownOperationException`, 404, as AWS answers one, `../admin` and the like included), a
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
