"""The restJson1 protocol's request-response operations, written once: a route per operation (method and
path from botocore's model), the operation's input gathered from the JSON body, the query string and the
path, its output as JSON with the modeled status. Errors are answered in the service's envelope
(`render`, built on emulator.wire.awserrors).

What streams (InvokeEndpoint's response stream, Converse's, InvokeAgentRuntime's pass-through) is not a
dict in and out, so those routes are the services' own; this is the table-driven rest (AgentCore's
control plane)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quart import Blueprint, Response, request

from emulator.wire.awserrors import AwsError, render_errors, request_id
from emulator.wire.awsjson import Operation


@dataclass(frozen=True)
class Route:
    method: str
    rule: str
    """Quart's rule for botocore's `requestUri` (`/runtimes/<agentRuntimeId>/`: path members by name)."""
    operation: str
    status: int


def json_object(raw: bytes) -> dict[str, Any]:
    """A request body that must be a JSON object (empty means `{}`); anything else is `AwsError`."""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        raise AwsError(
            "ValidationException", f"request body is not JSON: {exc}", 400, reason="CannotParse"
        ) from exc
    if not isinstance(body, dict):
        raise AwsError("ValidationException", "request body must be a JSON object", 400, reason="CannotParse")
    return body


def rest_json_blueprint(
    name: str,
    routes: Sequence[Route],
    operations: Mapping[str, Operation],
    render: Callable[[AwsError], Response],
    query: Mapping[str, str],
) -> Blueprint:
    """A route per operation; `query` maps query-string keys to the members they carry."""
    bp = Blueprint(name, __name__)
    render_errors(bp, render)

    async def call(operation: str, status: int, path: Mapping[str, str]) -> Response:
        raw = await request.get_data()
        try:
            from_query = {member: request.args[key] for key, member in query.items() if key in request.args}
            result = operations[operation]({**json_object(raw), **from_query, **path})
        except AwsError as err:
            return render(err)
        return Response(
            json.dumps(result, allow_nan=False),
            status=status,
            content_type="application/json",
            headers={"x-amzn-RequestId": request_id()},
        )

    for route in routes:

        async def handle(
            operation: str = route.operation, status: int = route.status, **path: str
        ) -> Response:
            return await call(operation, status, path)

        bp.add_url_rule(route.rule, route.operation, handle, methods=[route.method])
    return bp
