"""SigV4 (emulator/wire/sigv4.py): botocore's signatures verified, others refused, the event chain as the
smithy signer writes it, a clock more than 15 minutes off refused; and the body the check hashes is the
one received, never the declared `x-amz-content-sha256`.

botocore signs the declared value when the header is present (its canonical request takes the payload
hash from the header), so a client can declare any hash and sign it; a verifier that signs what is
declared would then accept a body the signature never covered.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib

import pytest
from aws_sdk_signers import AsyncEventSigner
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage

from emulator.wire import eventstream
from emulator.wire.awserrors import AwsError
from emulator.wire.sigv4 import EventChain, Signed, presigned, signing_key, verify_presigned, verify_request

KEYS = {"AKIDTEST": "secret"}
PATH = "/endpoints/kokoro-82m/invocations"
BODY = b'{"text":"hi"}'


def signed_with_declared_hash(body: bytes, declared: str) -> list[tuple[str, str]]:
    """Headers of a request for `body`, signed by botocore over the payload hash `declared`."""
    request = AWSRequest(
        method="POST",
        url=f"http://127.0.0.1:8790{PATH}",
        data=body,
        headers={"Content-Type": "application/json", "X-Amz-Content-SHA256": declared},
    )
    SigV4Auth(Credentials("AKIDTEST", "secret"), "sagemaker", "us-east-1").add_auth(request)
    assert "x-amz-content-sha256" in request.headers["Authorization"], "the declared hash is signed"
    return [*request.headers.items(), ("host", "127.0.0.1:8790")]


def verify(headers: list[tuple[str, str]], body: bytes) -> None:
    verify_request(KEYS, method="POST", raw_path=PATH, raw_query="", headers=headers, body=body)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_declared_hash_that_matches_the_body_is_accepted() -> None:
    verify(signed_with_declared_hash(BODY, sha256_hex(BODY)), BODY)


@pytest.mark.parametrize(
    ("declared", "sent"),
    [
        (sha256_hex(BODY), b'{"text":"something else entirely"}'),  # the hash of one body, sent with another
        (sha256_hex(b"anything"), BODY),  # declared (and signed) a hash that is not the body's
        ("UNSIGNED-PAYLOAD", BODY),  # S3's opt-out: no other service skips the payload hash
        ("0" * 64, b""),
    ],
    ids=["other-body", "other-hash", "unsigned-payload", "zero-hash-empty-body"],
)
def test_a_declared_hash_that_does_not_match_the_body_is_refused(declared: str, sent: bytes) -> None:
    with pytest.raises(AwsError) as refused:
        verify(signed_with_declared_hash(sent, declared), sent)
    assert (refused.value.code, refused.value.status) == ("InvalidSignatureException", 403)


def _signed_request(secret: str) -> AWSRequest:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:8790/endpoints/kokoro-82m/invocations",
        data=b'{"text":"hi"}',
        headers={"Content-Type": "application/json"},
    )
    SigV4Auth(Credentials("AKIDTEST", secret), "sagemaker", "us-east-1").add_auth(request)
    return request


_UNSET = object()


def _verify(
    request: AWSRequest, keys: dict[str, str], body: object = _UNSET, now: datetime.datetime | None = None
) -> Signed:
    headers = [(k, v) for k, v in request.headers.items()] + [("host", "127.0.0.1:8790")]
    return verify_request(
        keys,
        method="POST",
        raw_path="/endpoints/kokoro-82m/invocations",
        raw_query="",
        headers=headers,
        body=request.body if body is _UNSET else body,  # type: ignore[arg-type]
        now=now,
    )


def test_sigv4_accepts_botocore_signatures_and_refuses_others() -> None:
    signed = _verify(_signed_request("secret"), {"AKIDTEST": "secret"})
    assert signed.scope.endswith("/us-east-1/sagemaker/aws4_request")
    with pytest.raises(AwsError) as wrong:
        _verify(_signed_request("other"), {"AKIDTEST": "secret"})
    assert (wrong.value.code, wrong.value.status) == ("InvalidSignatureException", 403)
    with pytest.raises(AwsError, match="security token"):
        _verify(_signed_request("secret"), {"AKIDOTHER": "secret"})


def test_event_chain_follows_the_smithy_signer() -> None:
    now = datetime.datetime.now(datetime.UTC)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    seed = "ab" * 32
    signed = Signed(
        signing_key("secret", amz_date[:8], "us-east-1", "sagemaker"),
        f"{amz_date[:8]}/us-east-1/sagemaker/aws4_request",
        amz_date,
        seed,
    )
    signer = AsyncEventSigner(initial_signature=seed.encode(), event_encoder_cls=EventHeaderEncoder)
    identity = AWSCredentialsIdentity(access_key_id="AKIDTEST", secret_access_key="secret")
    inner = eventstream.event("PayloadPart", b"hello", content_type="application/octet-stream")

    async def sign(payload: bytes) -> eventstream.Message:
        message = await signer.sign(
            event=EventMessage(payload=payload),
            identity=identity,
            properties={"region": "us-east-1", "service": "sagemaker"},
        )
        return eventstream.decode(message.encode())

    chain = EventChain(signed)
    first, second = asyncio.run(sign(inner)), None
    assert chain.verify(first)
    second = asyncio.run(sign(inner))
    tampered = eventstream.Message(second.headers, second.payload[:-1] + b"!")
    assert not chain.verify(tampered)
    assert chain.verify(second)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (datetime.timedelta(minutes=-16), "Signature expired"),
        (datetime.timedelta(minutes=16), "Signature not yet current"),
    ],
)
def test_sigv4_refuses_a_clock_more_than_15_minutes_off(offset: datetime.timedelta, message: str) -> None:
    request = _signed_request("secret")
    signed_at = datetime.datetime.strptime(request.context["timestamp"], "%Y%m%dT%H%M%SZ")
    signed_at = signed_at.replace(tzinfo=datetime.UTC)
    keys = {"AKIDTEST": "secret"}
    _verify(request, keys, now=signed_at + datetime.timedelta(minutes=14))
    with pytest.raises(AwsError) as caught:
        _verify(request, keys, now=signed_at - offset)
    assert (caught.value.code, caught.value.status) == ("InvalidSignatureException", 403)
    assert caught.value.message.startswith(message)


def test_sigv4_checks_the_body_received_not_the_hash_declared() -> None:
    request = _signed_request("secret")
    with pytest.raises(AwsError, match="does not match"):
        _verify(request, {"AKIDTEST": "secret"}, body=b'{"text":"other"}')
    with pytest.raises(AwsError, match="STREAMING-AWS4-HMAC-SHA256-EVENTS"):
        _verify(request, {"AKIDTEST": "secret"}, body=None)


def _presigned(url: str, expires: int = 300) -> tuple[str, str]:
    request = AWSRequest(method="GET", url=url, headers={"host": "runtime.example:443"})
    SigV4QueryAuth(
        Credentials("AKIDEXAMPLE", "secret"), "bedrock-agentcore", "us-east-1", expires=expires
    ).add_auth(request)
    path, _, query = request.url.removeprefix("https://runtime.example:443").partition("?")
    return path, query


def _check_presigned(path: str, query: str, now: datetime.datetime | None = None) -> None:
    verify_presigned(
        {"AKIDEXAMPLE": "secret"},
        method="GET",
        raw_path=path,
        raw_query=query,
        headers=[("host", "runtime.example:443")],
        now=now,
    )


def test_a_presigned_url_is_accepted_until_it_expires_and_refused_when_changed() -> None:
    path, query = _presigned("https://runtime.example:443/runtimes/arn%3Aaws%3Ax/ws?qualifier=DEFAULT", 60)
    assert presigned(query) and not presigned("qualifier=DEFAULT")
    _check_presigned(path, query)
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=61)
    with pytest.raises(AwsError, match="expired"):
        _check_presigned(path, query, now=later)
    with pytest.raises(AwsError, match="does not match"):
        _check_presigned(path, query.replace("qualifier=DEFAULT", "qualifier=OTHER"))
    with pytest.raises(AwsError, match="missing X-Amz-Credential"):
        _check_presigned(path, "&".join(p for p in query.split("&") if not p.startswith("X-Amz-Credential")))
