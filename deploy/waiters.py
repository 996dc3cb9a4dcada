"""Waiting until the endpoint is InService and the runtime READY, with boto3 waiters.

SageMaker ships `endpoint_in_service`; AgentCore ships no runtime waiter, so one is declared here in
botocore's own waiter language (same retry loop, same `WaiterError`). A failure becomes `WaitFailed`
carrying the service's reason.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import WaiterError
from botocore.waiter import WaiterModel, create_waiter_with_client

from deploy.errors import WaitFailed
from deploy.status import Status, endpoint_status, find_runtime, runtime_status

_RUNTIME_WAITERS = WaiterModel(
    {
        "version": 2,
        "waiters": {
            "AgentRuntimeReady": {
                "operation": "GetAgentRuntime",
                "delay": 10,
                "maxAttempts": 90,
                "acceptors": [
                    {"matcher": "path", "argument": "status", "state": "success", "expected": "READY"},
                    {"matcher": "path", "argument": "status", "state": "retry", "expected": "CREATING"},
                    {"matcher": "path", "argument": "status", "state": "retry", "expected": "UPDATING"},
                    {
                        "matcher": "path",
                        "argument": "status",
                        "state": "failure",
                        "expected": "CREATE_FAILED",
                    },
                    {
                        "matcher": "path",
                        "argument": "status",
                        "state": "failure",
                        "expected": "UPDATE_FAILED",
                    },
                    {"matcher": "error", "state": "failure", "expected": "ResourceNotFoundException"},
                ],
            }
        },
    }
)


def _waiter_config(delay_s: float, attempts: int) -> dict[str, Any]:
    # botocore sleeps `Delay` seconds between attempts and accepts a float.
    return {"Delay": delay_s, "MaxAttempts": attempts}


def wait_endpoint_in_service(sagemaker: Any, name: str, *, delay_s: float, attempts: int) -> Status:
    try:
        sagemaker.get_waiter("endpoint_in_service").wait(
            EndpointName=name, WaiterConfig=_waiter_config(delay_s, attempts)
        )
    except WaiterError as exc:
        status = endpoint_status(sagemaker, name)
        if "Max attempts exceeded" in str(exc):
            raise WaitFailed(
                f"{status}: still not InService after {attempts} checks {delay_s:g} s apart"
            ) from exc
        raise WaitFailed(str(status)) from exc
    return endpoint_status(sagemaker, name)


def wait_runtime_ready(agentcore: Any, name: str, *, delay_s: float, attempts: int) -> Status:
    summary = find_runtime(agentcore, name)
    if summary is None:
        raise WaitFailed(str(runtime_status(agentcore, name)))
    waiter = create_waiter_with_client("AgentRuntimeReady", _RUNTIME_WAITERS, agentcore)
    try:
        waiter.wait(agentRuntimeId=summary["agentRuntimeId"], WaiterConfig=_waiter_config(delay_s, attempts))
    except WaiterError as exc:
        status = runtime_status(agentcore, name)
        if "Max attempts exceeded" in str(exc):
            raise WaitFailed(
                f"{status}: still not READY after {attempts} checks {delay_s:g} s apart"
            ) from exc
        raise WaitFailed(str(status)) from exc
    return runtime_status(agentcore, name)
