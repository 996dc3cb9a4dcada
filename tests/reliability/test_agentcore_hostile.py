"""The emulated AgentCore Runtime (and the emulator's other paths) under hostile requests, driven by
boto3 and raw HTTP: a typed AWS error for every bad request, never an HTML page or a 500; another
account's runtime refused; a client that goes away reaches the agent replica at once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.exceptions
import httpx
import pytest

from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import boto_client, fast_config, manifest
from tests.reliability.emulator_support import say, sign

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(180)]

KEY, SECRET = "AKIDHOSTILE", "hostile-secret"
SESSION = "hostile-session-" + "0" * 30
AGENT = str(Path(__file__).with_name("marking_agent.py"))


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [
        {
            "kind": "AgentRuntime",
            "spec": {
                "agentRuntimeName": "marking",
                "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": "marking-agent:1"}},
                "roleArn": "arn:aws:iam::123456789012:role/agent",
            },
        }
    ]
    images = {"marking-agent": {"command": ["{python}", AGENT, "--port", "{port}"]}}
    config = fast_config(tmp_path_factory.mktemp("hostile"), sigv4_keys={KEY: SECRET})
    with emulator_in_thread(config, manifest(resources, images)) as running:
        yield running


@pytest.fixture(scope="module")
def data(emu: Emulator):
    return boto_client(emu, "bedrock-agentcore", validate=False, key=KEY, secret=SECRET)


def error_of(call: Any) -> dict[str, Any]:
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call()
    return raised.value.response


def signed_post(emu: Emulator, path: str, body: bytes) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    headers |= sign("POST", emu.http_url + path, body, key=KEY, secret=SECRET, service="bedrock-agentcore")
    return httpx.post(emu.http_url + path, content=body, headers=headers, timeout=10)


@pytest.mark.parametrize(
    "body", [{"maxResults": [1]}, {"maxResults": {}}, {"maxResults": True}, {"nextToken": 5.5}]
)
def test_a_list_member_of_the_wrong_type_is_a_validation_exception(emu: Emulator, body: dict) -> None:
    response = signed_post(emu, "/runtimes/", json.dumps(body).encode())
    say(f"POST /runtimes/ {json.dumps(body)}", f"{response.status_code} {response.text[:70]}")
    assert response.status_code == 400 and response.headers["x-amzn-ErrorType"] == "ValidationException"
    assert response.json()["fieldList"][0]["name"] == next(iter(body))


@pytest.mark.parametrize(("member", "bad"), [("maxResults", "many"), ("maxResults", 0), ("nextToken", "-1")])
def test_a_list_query_member_out_of_range_is_a_validation_exception(emu: Emulator, member: str, bad) -> None:
    control = boto_client(emu, "bedrock-agentcore-control", validate=False, key=KEY, secret=SECRET)
    error = error_of(lambda: control.list_agent_runtimes(**{member: bad}))
    say(f"list_agent_runtimes({member}={bad!r})", error["Error"]["Code"])
    assert error["Error"]["Code"] == "ValidationException" and error["fieldList"][0]["name"] == member


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize("path", ["/no/such/operation", "/../admin", "/runtimes/%2e%2e/%2e%2e/admin", "/%00"])
def test_an_unknown_path_is_an_aws_error(emu: Emulator, path: str, signed: bool) -> None:
    headers = {"Content-Type": "application/json"}
    if signed:
        headers |= sign(
            "POST", emu.http_url + path, b"{}", key=KEY, secret=SECRET, service="bedrock-agentcore"
        )
    response = httpx.post(emu.http_url + path, content=b"{}", headers=headers, timeout=10)
    say(f"POST {path} {'signed' if signed else 'unsigned'}", f"{response.status_code} {response.text[:70]}")
    assert 400 <= response.status_code < 500
    assert (
        response.headers["x-amzn-ErrorType"]
        and response.json()["__type"] == response.headers["x-amzn-ErrorType"]
    )
    assert response.json()["message"]


def test_a_bare_runtime_id_needs_this_account(emu: Emulator, data) -> None:
    runtime_id = emu.runtime_arn("marking").rsplit("/", 1)[1]
    invoke = data.invoke_agent_runtime
    payload = json.dumps({"mark": "/dev/null"}).encode()
    error = error_of(lambda: invoke(agentRuntimeArn=runtime_id, accountId="999999999999", payload=payload))
    say("invoke by id with another accountId", error["Error"]["Code"])
    assert (
        error["Error"]["Code"] == "AccessDeniedException"
        and error["ResponseMetadata"]["HTTPStatusCode"] == 403
    )
    other_arn = emu.runtime_arn("marking").replace(":123456789012:", ":999999999999:")
    assert error_of(lambda: invoke(agentRuntimeArn=other_arn, payload=payload))["Error"]["Code"] == (
        "AccessDeniedException"
    )
    error = error_of(lambda: invoke(agentRuntimeArn=runtime_id, payload=payload))
    assert error["Error"]["Code"] == "ValidationException"
    served = invoke(
        agentRuntimeArn=runtime_id, accountId="123456789012", payload=payload, runtimeSessionId=SESSION
    )
    assert b'"index": 0' in served["response"].read(20)
    served["response"].close()


def test_a_client_that_goes_away_reaches_the_agent_at_once(emu: Emulator, data, tmp_path: Path) -> None:
    mark = tmp_path / "abandoned"
    response = data.invoke_agent_runtime(
        agentRuntimeArn=emu.runtime_arn("marking"),
        runtimeSessionId=SESSION,
        payload=json.dumps({"mark": str(mark)}).encode(),
    )
    assert b'"index": 0' in response["response"]._raw_stream.read1(1024)
    response["response"].close()
    closed = time.monotonic()
    while not mark.exists() and time.monotonic() - closed < 3:
        time.sleep(0.02)
    say(
        "close an invocation's body after its first event",
        f"agent saw it after {time.monotonic() - closed:.2f} s",
    )
    assert mark.exists(), "the agent replica is still streaming to a client that went away"
