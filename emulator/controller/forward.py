"""The one way an emulated data plane reaches a replica's container: `POST /invocations` on the
replica's address, the answer opened as a stream (SageMaker's InvokeEndpoint and its response stream,
the OpenAI routes in front of them, and AgentCore's InvokeAgentRuntime all go through it)."""

from __future__ import annotations

import httpx

from emulator.controller.store import Replica


async def post_invocation(
    http: httpx.AsyncClient, replica: Replica, body: bytes, headers: dict[str, str], timeout_s: float
) -> httpx.Response:
    """The container's answer, headers read and body still streaming (the caller closes it)."""
    host, port = replica.address or ("127.0.0.1", 0)
    request = http.build_request(
        "POST", f"http://{host}:{port}/invocations", content=body, headers=headers, timeout=timeout_s
    )
    return await http.send(request, stream=True)
