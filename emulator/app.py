"""The Quart app: every face of the emulator on one ASGI app.

The same app serves both listeners (plain HTTP/1.1 and TLS h2); clients pick the face by URL:
`POST /` + `X-Amz-Target` is the SageMaker control plane, `/endpoints/<name>/invocations*` the
runtimes, `/model/<id>/converse*` Bedrock Runtime, `/runtimes/...` Bedrock AgentCore (control plane,
and `/runtimes/<ARN>/invocations` its data plane), `/sts/` STS GetCallerIdentity, `/cloudformation/`
the stacks of the agent runtimes, `/_emulator/status` the operator view. SigV4 (when keys
are configured) is checked once for every AWS face, before its route runs (emulator.wire.auth).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from quart import Quart

from emulator.admin import admin_blueprint
from emulator.agentcore.cloudformation import cloudformation_blueprint
from emulator.agentcore.faces import agentcore_control_blueprint, agentcore_runtime_blueprint
from emulator.agentcore.operations import AgentRuntimeControl
from emulator.agentcore.sts import sts_blueprint
from emulator.bedrock.converse import bedrock_blueprint
from emulator.config import EmulatorConfig
from emulator.controller.routing import Router
from emulator.controller.runtimes import Runtime
from emulator.controller.store import Store
from emulator.sagemaker.bidirectional import bidi_blueprint
from emulator.sagemaker.control_plane import ControlPlane, control_plane_blueprint
from emulator.sagemaker.invoke import classic_blueprint
from emulator.wire import auth


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


def create_app(services: Services) -> Quart:
    app = Quart("emulator")
    # Streams live as long as the client keeps them open; bodies are bounded per face.
    app.config.update(BODY_TIMEOUT=None, RESPONSE_TIMEOUT=None, MAX_CONTENT_LENGTH=None)
    auth.install(app, services.config)
    app.register_blueprint(control_plane_blueprint(services.control_plane))
    app.register_blueprint(classic_blueprint(services.config, services.router, services.http))
    app.register_blueprint(bidi_blueprint(services.config, services.router, services.runtime))
    app.register_blueprint(bedrock_blueprint(services.config))
    runtimes = services.agent_runtimes
    app.register_blueprint(agentcore_control_blueprint(services.config, runtimes))
    app.register_blueprint(agentcore_runtime_blueprint(services.config, runtimes, services.http))
    app.register_blueprint(sts_blueprint(services.config))
    app.register_blueprint(cloudformation_blueprint(services.config, runtimes))
    app.register_blueprint(admin_blueprint(services.store, services.info))
    return app
