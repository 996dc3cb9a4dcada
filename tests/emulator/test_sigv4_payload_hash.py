"""The SigV4 check hashes the body it received and never trusts the declared `x-amz-content-sha256`.

botocore signs the declared value when the header is present (its canonical request takes the payload
hash from the header), so a client can declare any hash and sign it; a verifier that signs what is
declared would then accept a body the signature never covered.
"""

from __future__ import annotations

import hashlib

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from emulator.wire.awserrors import AwsError
from emulator.wire.sigv4 import verify_request

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
