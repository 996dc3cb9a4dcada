"""SigV4 on (`EMULATOR_SIGV4_KEYS`): every AWS service's routes refuse every bad signature, the same way.

Faces: the control plane, InvokeEndpoint, InvokeEndpointWithResponseStream, the bidirectional stream
(HTTP/2), Bedrock Converse and ConverseStream. Bad signatures: none, a wrong secret, an unknown key, a
clock 20 minutes off either way, a body other than the one signed, `UNSIGNED-PAYLOAD`. The requests
are signed by botocore's own signer and sent raw, so each case is exactly one mistake; the official
clients are checked too, for what they surface. On the bidirectional stream every event must continue
the signature chain: an unsigned or wrongly signed event ends the stream before reaching the container.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from unittest import mock

import botocore.exceptions
import pytest

from emulator.server import Emulator
from tests.emulator.support import (
    bidi_client,
    boto_client,
    next_part,
    open_stream,
    part,
)
from tests.reliability.emulator_support import (
    BEDROCK_MODEL_ID,
    BIDI_PATH,
    STREAMING_HEADERS,
    converse_body,
    echo_emulator,
    envelope,
    payload_part,
    post,
    say,
    sha256_hex,
    sign,
)

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]

KEY, SECRET = "AKIDRELIABILITY", "reliability-secret"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    home = tmp_path_factory.mktemp("emulator")
    fast_model = {"llm_first_token_ms": 0, "llm_tokens_per_s": 2000.0}
    with echo_emulator(home, sigv4_keys={KEY: SECRET}, **fast_model) as running:
        yield running


@dataclass(frozen=True)
class Route:
    path: str
    service: str
    headers: dict[str, str]
    body: bytes
    http2: bool = False
    json_protocol: bool = False


ROUTES = {
    "control plane": Route(
        "/",
        "sagemaker",
        {"X-Amz-Target": "SageMaker.ListEndpoints", "Content-Type": "application/x-amz-json-1.1"},
        b"{}",
        json_protocol=True,
    ),
    "InvokeEndpoint": Route(
        "/endpoints/echo/invocations", "sagemaker", {"Content-Type": "application/octet-stream"}, b"hello"
    ),
    "response stream": Route(
        "/endpoints/echo/invocations-response-stream",
        "sagemaker",
        {"Content-Type": "application/octet-stream"},
        b"hello",
    ),
    "Converse": Route(
        f"/model/{BEDROCK_MODEL_ID}/converse",
        "bedrock",
        {"Content-Type": "application/json"},
        converse_body(),
    ),
    "ConverseStream": Route(
        f"/model/{BEDROCK_MODEL_ID}/converse-stream",
        "bedrock",
        {"Content-Type": "application/json"},
        converse_body(),
    ),
    "bidirectional stream": Route(
        BIDI_PATH.format(name="echo"),
        "sagemaker",
        STREAMING_HEADERS,
        envelope(payload_part(b"hello"), b"\0" * 32),
        http2=True,
    ),
}


@dataclass(frozen=True)
class Mistake:
    code: str
    message: str = ""
    key: str = KEY
    secret: str = SECRET
    skew: datetime.timedelta | None = None
    signed_body: bytes | None = None
    """Sign this body (declared in x-amz-content-sha256), then send the route's own."""
    declared_hash: str | None = None
    unsigned: bool = False
    extra: dict[str, str] = field(default_factory=dict)


MISTAKES = {
    "unsigned": Mistake("MissingAuthenticationTokenException", unsigned=True),
    "wrong secret": Mistake("InvalidSignatureException", "does not match", secret="not-the-secret"),
    "unknown key": Mistake("UnrecognizedClientException", "security token", key="AKIDNOBODYKNOWS"),
    "clock 20 min behind": Mistake(
        "InvalidSignatureException", "Signature expired", skew=datetime.timedelta(minutes=-20)
    ),
    "clock 20 min ahead": Mistake(
        "InvalidSignatureException", "Signature not yet current", skew=datetime.timedelta(minutes=20)
    ),
    "body swapped after signing": Mistake("InvalidSignatureException", signed_body=b"the signed body"),
    "UNSIGNED-PAYLOAD": Mistake("InvalidSignatureException", declared_hash="UNSIGNED-PAYLOAD"),
}


def _request(emu: Emulator, route: Route, mistake: Mistake | None) -> tuple[dict[str, str], bytes]:
    headers = dict(route.headers)
    if mistake is not None and mistake.unsigned:
        return headers, route.body
    mistake = mistake or Mistake("")
    signed_body = route.body
    if mistake.signed_body is not None:
        signed_body = mistake.signed_body
        headers["x-amz-content-sha256"] = sha256_hex(signed_body)
    if mistake.declared_hash is not None:
        headers["x-amz-content-sha256"] = mistake.declared_hash
    at = None
    if mistake.skew is not None:
        at = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + mistake.skew
    base = emu.h2_url if route.http2 else emu.http_url
    signed = sign(
        "POST",
        f"{base}{route.path}",
        signed_body,
        key=mistake.key,
        secret=mistake.secret,
        service=route.service,
        headers=headers,
        at=at,
    )
    return signed, route.body


@pytest.mark.parametrize("mistake_name", list(MISTAKES))
@pytest.mark.parametrize("route_name", list(ROUTES))
async def test_every_route_refuses_every_bad_signature(
    emu: Emulator, route_name: str, mistake_name: str
) -> None:
    route, mistake = ROUTES[route_name], MISTAKES[mistake_name]
    headers, body = _request(emu, route, mistake)
    answer = await post(emu, route.path, body, headers, http2=route.http2)
    say(f"{route_name}: {mistake_name}", answer.describe())
    assert answer.status == 403, answer.describe()
    assert answer.error_type == mistake.code
    document = json.loads(answer.body)
    if route.json_protocol:
        assert document["__type"] == mistake.code
    message = document.get("Message") or document.get("message") or ""
    assert mistake.message in message


@pytest.mark.parametrize("route_name", [name for name, route in ROUTES.items() if not route.http2])
async def test_a_correct_signature_passes_on_every_route(emu: Emulator, route_name: str) -> None:
    route = ROUTES[route_name]
    headers, body = _request(emu, route, None)
    answer = await post(emu, route.path, body, headers)
    say(f"{route_name}: correctly signed", answer.describe())
    assert answer.status == 200, answer.describe()
    assert all(e.message_type == "event" for e in answer.events)


def test_bedrock_refuses_bad_signatures_through_boto3(emu: Emulator) -> None:
    for key, secret, code in (
        (KEY, "wrong", "InvalidSignatureException"),
        ("AKIDX", SECRET, "UnrecognizedClientException"),
    ):
        client = boto_client(emu, "bedrock-runtime", key=key, secret=secret)
        messages = [{"role": "user", "content": [{"text": "Hi"}]}]
        for call in (client.converse, client.converse_stream):
            with pytest.raises(botocore.exceptions.ClientError) as caught:
                call(modelId=BEDROCK_MODEL_ID, messages=messages)
            say(f"boto3 bedrock-runtime {call.__name__} key={key}", caught.value.response["Error"]["Code"])
            assert caught.value.response["Error"]["Code"] == code
            assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    ok = boto_client(emu, "bedrock-runtime").converse(
        modelId=BEDROCK_MODEL_ID, messages=[{"role": "user", "content": [{"text": "Hi"}]}]
    )
    assert ok["output"]["message"]["content"][0]["text"]


def test_boto3_with_a_skewed_clock_sees_signature_expired(emu: Emulator) -> None:
    late = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=6)

    def clock(remove_tzinfo: bool = True) -> datetime.datetime:
        return late.replace(tzinfo=None) if remove_tzinfo else late

    for service, call, kwargs in (
        ("sagemaker", "list_endpoints", {}),
        ("sagemaker-runtime", "invoke_endpoint", {"EndpointName": "echo", "Body": b"x"}),
        (
            "bedrock-runtime",
            "converse",
            {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "x"}]}]},
        ),
    ):
        client = boto_client(emu, service)
        # botocore signs with its CRT signer when awscrt is installed, with its own otherwise.
        with (
            mock.patch("botocore.auth.get_current_datetime", clock),
            mock.patch("botocore.crt.auth.get_current_datetime", clock),
            pytest.raises(botocore.exceptions.ClientError) as caught,
        ):
            getattr(client, call)(**kwargs)
        error = caught.value.response["Error"]
        say(f"boto3 {service} {call} signed 6 h ago", f"{error['Code']}: {error['Message'][:60]}")
        assert error["Code"] == "InvalidSignatureException"
        assert error["Message"].startswith("Signature expired")


async def test_official_bidi_client_with_a_wrong_or_unknown_key_is_refused(emu: Emulator) -> None:
    for key, secret, code in (
        (KEY, "wrong", "InvalidSignatureException"),
        ("AKIDX", SECRET, "UnrecognizedClientException"),
    ):
        client = await bidi_client(emu, key, secret)
        stream = await open_stream(client, "echo")
        await stream.input_stream.send(part(b"x"))
        with pytest.raises(Exception, match=rf"status: 403 .*{code}"):
            await stream.await_output()
        say(f"official HTTP/2 client key={key}", f"403 {code}")


async def _signed_stream(emu: Emulator, events: list[bytes]):
    path = BIDI_PATH.format(name="echo")
    headers = sign(
        "POST",
        f"{emu.h2_url}{path}",
        b"",
        key=KEY,
        secret=SECRET,
        service="sagemaker",
        headers=STREAMING_HEADERS,
    )
    return await post(emu, path, events, headers, http2=True)


@pytest.mark.parametrize(
    ("case", "event"),
    [
        ("an unsigned event", payload_part(b"sneaked in", DataType="UTF8")),
        ("an envelope without :chunk-signature", envelope(payload_part(b"sneaked in", DataType="UTF8"))),
        ("a wrong :chunk-signature", envelope(payload_part(b"sneaked in", DataType="UTF8"), b"\x01" * 32)),
    ],
)
async def test_events_outside_the_signature_chain_are_refused(emu: Emulator, case: str, event: bytes) -> None:
    answer = await _signed_stream(emu, [event])
    say(f"signed bidi request, then {case}", answer.describe())
    assert answer.status == 200
    assert [e.exception_type for e in answer.events] == ["InternalStreamFailure"], (
        "nothing of the event reaches the container; the stream ends with a typed error"
    )
    assert "sign" in json.loads(answer.events[0].payload)["Message"]


async def test_the_signed_chain_of_the_official_client_passes(emu: Emulator) -> None:
    client = await bidi_client(emu, KEY, SECRET)
    stream = await open_stream(client, "echo")
    for word in (b"one", b"two", b"three"):
        await stream.input_stream.send(part(word, "UTF8"))
    _, events = await stream.await_output()
    assert [(await next_part(events)).bytes_ for _ in range(3)] == [b"one", b"two", b"three"]
    await stream.close()
    say("official HTTP/2 client, three signed events", "all three echoed")
