"""Bedrock AgentCore's routes (restJson1, the paths of botocore's `bedrock-agentcore-control` and
`bedrock-agentcore` models), errors in AgentCore's envelope (emulator/services/agentcore/errors.py).

Control plane: `PUT /runtimes/` create, `POST /runtimes/` list, `GET|PUT|DELETE /runtimes/<id>/` get,
update, delete, `PUT|POST /runtimes/<id>/runtime-endpoints/` create, list,
`GET|DELETE .../runtime-endpoints/<name>/`: the operations of `control.py` through the one restJson1
binding (emulator.wire.restjson). Data plane: `POST /runtimes/<URL-encoded ARN>/invocations`
(`runtime.py`, the agent's answer passed through as it arrives) and `GET /runtimes/<URL-encoded ARN>/ws`,
the runtime's WebSocket (InvokeAgentRuntimeWithWebSocketStream: messages relayed both ways).
"""

from __future__ import annotations

import httpx
from quart import Blueprint

from emulator.config import EmulatorConfig
from emulator.services.agentcore.control import AgentCoreControl
from emulator.services.agentcore.errors import agentcore_error
from emulator.services.agentcore.runtime import runtime_handlers
from emulator.wire.restjson import Route, rest_json_blueprint
from emulator.wire.views import WEBSOCKET, View, views_blueprint

CONTROL_ROUTES = (
    Route("PUT", "/runtimes/", "CreateAgentRuntime", 202),
    Route("POST", "/runtimes/", "ListAgentRuntimes", 200),
    Route("GET", "/runtimes/<agentRuntimeId>/", "GetAgentRuntime", 200),
    Route("PUT", "/runtimes/<agentRuntimeId>/", "UpdateAgentRuntime", 202),
    Route("DELETE", "/runtimes/<agentRuntimeId>/", "DeleteAgentRuntime", 202),
    Route("PUT", "/runtimes/<agentRuntimeId>/runtime-endpoints/", "CreateAgentRuntimeEndpoint", 202),
    Route("POST", "/runtimes/<agentRuntimeId>/runtime-endpoints/", "ListAgentRuntimeEndpoints", 200),
    Route(
        "GET", "/runtimes/<agentRuntimeId>/runtime-endpoints/<endpointName>/", "GetAgentRuntimeEndpoint", 200
    ),
    Route(
        "DELETE",
        "/runtimes/<agentRuntimeId>/runtime-endpoints/<endpointName>/",
        "DeleteAgentRuntimeEndpoint",
        202,
    ),
)
RUNTIME_VIEWS = (
    View("POST", "/runtimes/<path:target>/invocations", "InvokeAgentRuntime"),
    View(WEBSOCKET, "/runtimes/<path:target>/ws", "InvokeAgentRuntimeWithWebSocketStream"),
)
QUERY_MEMBERS = {"version": "agentRuntimeVersion", "maxResults": "maxResults", "nextToken": "nextToken"}
"""The query-string members of the control-plane operations, by their model names."""


def blueprints(config: EmulatorConfig, control: AgentCoreControl, http: httpx.AsyncClient) -> list[Blueprint]:
    control_routes = rest_json_blueprint(
        "agentcore_control", CONTROL_ROUTES, control.operations(), agentcore_error, QUERY_MEMBERS
    )
    runtime_routes = views_blueprint(
        "agentcore_runtime", RUNTIME_VIEWS, runtime_handlers(config, control, http), agentcore_error
    )
    return [control_routes, runtime_routes]
