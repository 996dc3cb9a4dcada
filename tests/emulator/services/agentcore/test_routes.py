"""Bedrock AgentCore Runtime in the emulator, driven by boto3 `bedrock-agentcore-control` and
`bedrock-agentcore` exactly as the deploy commands and `agent-infra demo` drive AWS. The runtime is a
small agent on the real AgentCore SDK (tests/fixtures/agentcore_container.py), run as a replica."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.exceptions
import pytest
import websockets

from emulator.controller.runtimes.process import resolve_image
from emulator.manifest import DEFAULT_MANIFEST, load_manifest
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import FIXTURES, boto_client, fast_config, manifest, status

pytestmark = pytest.mark.integration  # real servers: the emulator, an AgentCore SDK app, boto3

SESSION = "test-session-" + "0" * 30
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
ROLE = "arn:aws:iam::123456789012:role/agent"
KEY, SECRET = "AKIDAGENTCORE", "agentcore-secret"
IMAGES = {
    "toy-agent": {"command": ["{python}", str(FIXTURES / "agentcore_container.py"), "--port", "{port}"]},
    "crashing-agent": {"command": ["{python}", "-c", "import sys; print('no model here'); sys.exit(4)"]},
}


def runtime_spec(name: str, image: str = "toy-agent:1", **extra: Any) -> dict[str, Any]:
    return {
        "agentRuntimeName": name,
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": image}},
        "roleArn": ROLE,
        **extra,
    }


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    resources = [{"kind": "AgentRuntime", "spec": runtime_spec("toy", environmentVariables={"MOOD": "calm"})}]
    config = fast_config(tmp_path_factory.mktemp("agentcore"), sigv4_keys={KEY: SECRET})
    with emulator_in_thread(config, manifest(resources, IMAGES)) as running:
        yield running


@pytest.fixture(scope="module")
def control(emu: Emulator):
    return boto_client(emu, "bedrock-agentcore-control", key=KEY, secret=SECRET)


@pytest.fixture(scope="module")
def data(emu: Emulator):
    return boto_client(emu, "bedrock-agentcore", key=KEY, secret=SECRET)


def invoke(data, arn: str, payload: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return data.invoke_agent_runtime(
        agentRuntimeArn=arn, runtimeSessionId=SESSION, payload=json.dumps(payload).encode(), **extra
    )


def arrivals(response: dict[str, Any]) -> list[tuple[float, bytes]]:
    """(monotonic arrival time, bytes) of each piece of the body as it comes off the socket."""
    raw = response["response"]._raw_stream
    pieces = []
    while chunk := raw.read1(65536):
        pieces.append((time.monotonic(), chunk))
    return pieces


def wait_status(control, runtime_id: str, wanted: set[str], within_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while True:
        runtime = control.get_agent_runtime(agentRuntimeId=runtime_id)
        if runtime["status"] in wanted or time.monotonic() > deadline:
            return runtime
        time.sleep(0.1)


def runtime_replica(emu: Emulator, name: str) -> dict[str, Any]:
    runtime = next(rt for rt in status(emu)["agent_runtimes"] if rt["name"] == name)
    return next(r for r in runtime["replicas"] if r["deployment"] == "current")


def test_the_default_manifest_runs_the_voice_agent_speaking_through_kokoro() -> None:
    manifest = load_manifest(DEFAULT_MANIFEST)
    assert manifest.agent_runtimes == ["voice_agent"]
    spec = next(r.spec for r in manifest.resources if r.kind == "AgentRuntime")
    assert spec["environmentVariables"]["AGENT_TTS_ENDPOINT"] in manifest.endpoints
    image = resolve_image(
        manifest.images, spec["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
    )
    assert image is not None and image.command[1:4] == ("-m", "agent", "serve")


def test_env_names_the_variables_boto3_reads(emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**emu.env, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
    assert env["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE"] == env["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    listed = boto3.client("bedrock-agentcore-control").list_agent_runtimes()["agentRuntimes"]
    assert [(r["agentRuntimeName"], r["status"]) for r in listed] == [("toy", "READY")]
    assert (
        listed[0]["agentRuntimeArn"]
        == f"arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/{listed[0]['agentRuntimeId']}"
    )


def test_manifest_runtime_is_ready_with_its_request_echoed(control) -> None:
    summary = control.list_agent_runtimes()["agentRuntimes"][0]
    runtime = control.get_agent_runtime(agentRuntimeId=summary["agentRuntimeId"])
    assert runtime["status"] == "READY" and runtime["agentRuntimeVersion"] == "1"
    assert runtime["environmentVariables"] == {"MOOD": "calm"}  # the emulator's own variables are not shown
    assert runtime["roleArn"] == ROLE
    assert runtime["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"] == "toy-agent:1"
    endpoints = control.list_agent_runtime_endpoints(agentRuntimeId=summary["agentRuntimeId"])
    assert [e["name"] for e in endpoints["runtimeEndpoints"]] == ["DEFAULT"]


def test_invoke_passes_the_event_stream_through_as_it_arrives(emu: Emulator, data) -> None:
    arn = emu.runtime_arn("toy")
    response = invoke(data, arn, {"events": 4, "interval_ms": 250}, accept="text/event-stream")
    assert response["contentType"].startswith("text/event-stream")
    assert response["runtimeSessionId"] == SESSION
    pieces = arrivals(response)
    body = b"".join(chunk for _, chunk in pieces)
    events = [json.loads(line[6:]) for line in body.decode().split("\n\n") if line]
    assert [e["index"] for e in events] == [0, 1, 2, 3]
    assert {e["session_id"] for e in events} == {SESSION}  # the header reached the container's SDK
    # Not buffered: the four events come off the socket spread over the container's 3 x 250 ms.
    assert len(pieces) >= 3 and pieces[-1][0] - pieces[0][0] > 0.5


def test_a_session_id_is_made_when_the_client_sends_none(emu: Emulator, data) -> None:
    response = data.invoke_agent_runtime(agentRuntimeArn=emu.runtime_arn("toy"), payload=b'{"events": 1}')
    assert len(response["runtimeSessionId"]) >= 33
    assert response["runtimeSessionId"] in response["response"].read().decode()


@pytest.mark.parametrize(
    ("change", "code", "http_status"),
    [
        (
            {"arn": "arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/nobody-0123456789"},
            "ResourceNotFoundException",
            404,
        ),
        ({"qualifier": "nope"}, "ResourceNotFoundException", 404),
        ({"session": "too-short"}, "ValidationException", 400),
        ({"arn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/x"}, "ValidationException", 400),
        ({"payload": {"fail": True}}, "RuntimeClientError", 424),
    ],
)
def test_errors_are_the_modeled_exceptions(
    emu: Emulator, change: dict[str, Any], code: str, http_status: int
) -> None:
    client = boto_client(emu, "bedrock-agentcore", validate=False, key=KEY, secret=SECRET)
    request: dict[str, Any] = {
        "agentRuntimeArn": change.get("arn", emu.runtime_arn("toy")),
        "runtimeSessionId": change.get("session", SESSION),
        "payload": json.dumps(change.get("payload", {"events": 1})).encode(),
    }
    if "qualifier" in change:
        request["qualifier"] = change["qualifier"]
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        client.invoke_agent_runtime(**request)
    error = raised.value.response
    assert error["Error"]["Code"] == code and error["ResponseMetadata"]["HTTPStatusCode"] == http_status
    assert error["Error"]["Message"]
    if code == "ValidationException":
        assert error["reason"] == "FieldValidationFailed"


def test_a_wrong_signature_is_refused(emu: Emulator) -> None:
    client = boto_client(emu, "bedrock-agentcore", key=KEY, secret="not-the-secret")
    with pytest.raises(botocore.exceptions.ClientError, match="InvalidSignatureException"):
        invoke(client, emu.runtime_arn("toy"), {"events": 1})


def test_the_latency_knob_delays_this_hop(tmp_path) -> None:
    resources = [{"kind": "AgentRuntime", "spec": runtime_spec("slow")}]
    config = fast_config(tmp_path, latency_in_ms=150, latency_out_ms=150)
    with emulator_in_thread(config, manifest(resources, IMAGES)) as emu:
        client = boto_client(emu, "bedrock-agentcore")
        started = time.monotonic()
        pieces = arrivals(invoke(client, emu.runtime_arn("slow"), {"events": 1}))
    assert pieces and pieces[0][0] - started >= 0.3


def test_lifecycle_create_update_endpoints_delete(emu: Emulator, control, data) -> None:
    created = control.create_agent_runtime(**runtime_spec("life"))
    assert created["status"] == "CREATING" and created["agentRuntimeVersion"] == "1"
    runtime_id = created["agentRuntimeId"]
    with pytest.raises(botocore.exceptions.ClientError, match="ConflictException"):
        control.create_agent_runtime(**runtime_spec("life"))
    assert wait_status(control, runtime_id, {"READY"})["status"] == "READY"
    first_pid = runtime_replica(emu, "life")["pid"]

    updated = control.update_agent_runtime(
        agentRuntimeId=runtime_id,
        **{k: v for k, v in runtime_spec("life").items() if k != "agentRuntimeName"},
    )
    assert updated["status"] == "UPDATING" and updated["agentRuntimeVersion"] == "2"
    invoke(data, created["agentRuntimeArn"], {"events": 1})["response"].read()  # version 1 serves meanwhile
    assert wait_status(control, runtime_id, {"READY"})["agentRuntimeVersion"] == "2"
    assert runtime_replica(emu, "life")["pid"] != first_pid

    endpoint = control.create_agent_runtime_endpoint(agentRuntimeId=runtime_id, name="live")
    assert endpoint["agentRuntimeEndpointArn"].endswith(f"runtime/{runtime_id}/runtime-endpoint/live")
    assert (
        control.get_agent_runtime_endpoint(agentRuntimeId=runtime_id, endpointName="live")["status"]
        == "READY"
    )
    body = invoke(data, created["agentRuntimeArn"], {"events": 1}, qualifier="live")["response"].read()
    assert b'"index": 0' in body
    control.delete_agent_runtime_endpoint(agentRuntimeId=runtime_id, endpointName="live")
    names = [
        e["name"] for e in control.list_agent_runtime_endpoints(agentRuntimeId=runtime_id)["runtimeEndpoints"]
    ]
    assert names == ["DEFAULT"]

    assert control.delete_agent_runtime(agentRuntimeId=runtime_id)["status"] == "DELETING"
    deadline = time.monotonic() + 30
    with pytest.raises(botocore.exceptions.ClientError, match="ResourceNotFoundException"):
        while time.monotonic() < deadline:
            control.get_agent_runtime(agentRuntimeId=runtime_id)
            time.sleep(0.1)


def test_a_container_that_dies_at_start_is_create_failed_with_its_reason(
    emu: Emulator, control, data
) -> None:
    created = control.create_agent_runtime(**runtime_spec("broken", image="crashing-agent:1"))
    runtime = wait_status(control, created["agentRuntimeId"], {"CREATE_FAILED", "READY"})
    assert runtime["status"] == "CREATE_FAILED"
    assert "exited with status 4" in runtime["failureReason"] and "no model here" in runtime["failureReason"]
    with pytest.raises(botocore.exceptions.ClientError, match="ResourceNotFoundException"):
        invoke(data, created["agentRuntimeArn"], {"events": 1})
    control.delete_agent_runtime(agentRuntimeId=created["agentRuntimeId"])


def test_an_agent_killed_mid_turn_breaks_the_answer_and_is_restarted(emu: Emulator, data) -> None:
    arn = emu.runtime_arn("toy")
    before = runtime_replica(emu, "toy")
    response = invoke(data, arn, {"events": 50, "interval_ms": 50})
    with pytest.raises(botocore.exceptions.ResponseStreamingError):
        for chunk in response["response"].iter_chunks(64):
            if b'"index": 2' in chunk:
                os.kill(before["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        after = runtime_replica(emu, "toy")
        if after["restarts"] > before["restarts"] and after["ready"]:
            break
        time.sleep(0.2)
    assert after["restarts"] == before["restarts"] + 1 and after["pid"] != before["pid"]
    assert b'"index": 0' in invoke(data, arn, {"events": 1})["response"].read()


def test_agent_infra_status_and_destroy_run_unchanged(emu: Emulator, control) -> None:
    """The deploy commands' calls (STS, AgentCore control, SageMaker, CloudFormation) all answered here."""
    tags = {"aws:cloudformation:stack-name": "VoiceAgent-Runtime"}
    control.create_agent_runtime(
        **runtime_spec("voice_agent", tags=tags, environmentVariables={"AGENT_TTS_ENDPOINT": "tts"})
    )
    env = {
        **os.environ,
        **emu.env,
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "DEPLOY_WAIT_DELAY_S": "0.2",
    }

    def agent_infra(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", "import sys, deploy.cli; sys.exit(deploy.cli.agent_infra())", *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    deadline = time.monotonic() + 60
    while "voice_agent: READY" not in (shown := agent_infra("status")).stdout and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "ok agent runtime voice_agent: READY (version 1, speaks through tts" in shown.stdout, shown.stderr
    assert "-- endpoint kokoro-82m: not deployed" in shown.stdout and shown.returncode == 1  # none here

    destroyed = agent_infra("destroy")
    assert destroyed.returncode == 0, destroyed.stderr
    assert "VoiceAgent-Runtime: deleted" in destroyed.stdout
    assert "VoiceAgent-Base: not deployed" in destroyed.stdout
    names = [r["agentRuntimeName"] for r in control.list_agent_runtimes()["agentRuntimes"]]
    assert "voice_agent" not in names and "toy" in names
    assert "voice_agent: not deployed" in agent_infra("status").stdout


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"agentRuntimeName": "has-dash"}, "agentRuntimeName"),
        ({"roleArn": "not-a-role"}, "roleArn"),
        (
            {"agentRuntimeArtifact": {"codeConfiguration": {"code": {}, "runtime": "PYTHON_3_12"}}},
            "agentRuntimeArtifact",
        ),
        ({"environmentVariables": {"A": 1}}, "environmentVariables"),
        ({"tags": {"team": 5}}, "tags"),
    ],
)
def test_bad_create_requests_are_validation_exceptions(
    emu: Emulator, change: dict[str, Any], field: str
) -> None:
    client = boto_client(emu, "bedrock-agentcore-control", validate=False, key=KEY, secret=SECRET)
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        client.create_agent_runtime(**{**runtime_spec("fine"), **change})
    error = raised.value.response
    assert (
        error["Error"]["Code"] == "ValidationException" and error["ResponseMetadata"]["HTTPStatusCode"] == 400
    )
    assert error["fieldList"][0]["name"] == field
    assert "fine" not in [r["agentRuntimeName"] for r in client.list_agent_runtimes()["agentRuntimes"]]


def _toy_arn(control) -> str:
    runtimes = control.list_agent_runtimes()["agentRuntimes"]
    return next(r["agentRuntimeArn"] for r in runtimes if r["agentRuntimeName"] == "toy")


def _ws_url(emu: Emulator, arn: str) -> str:
    return f"{emu.http_url.replace('http://', 'ws://')}/runtimes/{quote(arn, safe='')}/ws"


def _signed_upgrade(url: str, *, presign: bool, secret: str = SECRET) -> tuple[str, dict[str, str]]:
    """How bedrock_agentcore's AgentCoreRuntimeClient signs its WebSocket (generate_ws_connection: SigV4
    headers over the https form of the URL; generate_presigned_url: SigV4QueryAuth), for a local URL,
    which its own URL builder refuses (it allows only AWS hosts)."""
    https = url.replace("ws://", "https://")  # what the SDK signs, whatever the scheme it connects with
    credentials = botocore.credentials.Credentials(KEY, secret)
    host = {"host": urlsplit(https).netloc}
    aws_request = botocore.awsrequest.AWSRequest(method="GET", url=https, headers=host)
    if presign:
        botocore.auth.SigV4QueryAuth(credentials, "bedrock-agentcore", "us-east-1", expires=300).add_auth(
            aws_request
        )
        return aws_request.url.replace("https://", "ws://"), {}
    aws_request.headers["x-amz-date"] = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    botocore.auth.SigV4Auth(credentials, "bedrock-agentcore", "us-east-1").add_auth(aws_request)
    return url, {name: aws_request.headers[name] for name in ("X-Amz-Date", "Authorization")}


@pytest.mark.parametrize("presign", [False, True], ids=["signed-headers", "presigned-url"])
async def test_the_runtimes_websocket_relays_messages_both_ways(
    emu: Emulator, control, presign: bool
) -> None:
    arn = _toy_arn(control)
    url, headers = _signed_upgrade(_ws_url(emu, arn), presign=presign)
    async with websockets.connect(url, additional_headers={**headers, SESSION_HEADER: SESSION}) as ws:
        assert json.loads(await ws.recv()) == {"session_id": SESSION}
        await ws.send("hello")
        assert await ws.recv() == "hello"
        await ws.send(b"\x00\x01{" * 1000)
        assert await ws.recv() == b"\x00\x01{" * 1000, "BINARY stays BINARY, byte for byte"
        await ws.send("close 4001")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd.code == 4001, "the container's close code reaches the client"


async def test_a_websocket_with_a_wrong_signature_or_runtime_is_refused_before_it_opens(
    emu: Emulator, control
) -> None:
    arn = _toy_arn(control)
    for presign in (False, True):
        url, headers = _signed_upgrade(_ws_url(emu, arn), presign=presign, secret="not-the-secret")
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(url, additional_headers=headers):
                pass
        assert refused.value.response.status_code == 403
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(_ws_url(emu, arn)):
            pass
    assert refused.value.response.status_code == 403, "unsigned"
    url, headers = _signed_upgrade(_ws_url(emu, arn.replace("runtime/", "runtime/nope")), presign=False)
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url, additional_headers=headers):
            pass
    assert refused.value.response.status_code == 404
    assert refused.value.response.headers["x-amzn-ErrorType"].startswith("ResourceNotFoundException")
