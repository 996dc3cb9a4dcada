"""Optional SigV4 verification against configured keys (off unless `sigv4_keys` is set).

Off, the emulator accepts any credentials, like SageMaker local mode. On, it recomputes the
signature the way botocore and the smithy signer build it (canonical request, string to sign,
derived key) and answers 403 as AWS does when it differs. The bidirectional stream's events are
signed in a chain seeded by the request signature (sagemaker-runtime.md §2.4); `EventChain` checks
each envelope.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import posixpath
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, unquote

from emulator.wire.awserrors import AwsError
from emulator.wire.eventstream import Message

_AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<akid>[^/\s]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request,\s*SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<sig>[0-9a-f]{64})\s*$"
)
STREAMING_EVENTS = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_SKEW = timedelta(minutes=15)
_AMZ_DATE = "%Y%m%dT%H%M%SZ"
_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)


@dataclass(frozen=True)
class Signed:
    """A verified request: what the event chain needs to go on."""

    signing_key: bytes = field(repr=False)
    scope: str
    amz_date: str
    signature: str


def _hmac(key: bytes, msg: str | bytes) -> bytes:
    return hmac.new(key, msg.encode() if isinstance(msg, str) else msg, hashlib.sha256).digest()


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def _canonical_path(raw_path: str) -> str:
    normalized = posixpath.normpath(raw_path) if raw_path not in {"", "/"} else "/"
    if raw_path.endswith("/") and normalized != "/":
        normalized += "/"
    return quote(normalized, safe="/~")


def _canonical_query(raw_query: str) -> str:
    pairs = [pair.partition("=") for pair in raw_query.split("&") if pair]
    return "&".join(f"{k}={v}" for k, _, v in sorted(pairs, key=lambda p: (p[0], p[2])))


def check_headers(
    keys: Mapping[str, str], headers: Iterable[tuple[str, str]], now: datetime | None = None
) -> None:
    """What can be refused from the headers alone, before a body is read: no or a malformed
    Authorization header, an unknown access key, a date outside the 15 minutes' skew (all 403)."""
    _authorization(keys, _by_name(headers), now)


def _by_name(headers: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = {}
    for name, value in headers:
        by_name.setdefault(name.lower(), []).append(value)
    return by_name


def _secret(keys: Mapping[str, str], access_key: str) -> str:
    secret = keys.get(access_key)
    if secret is None:
        raise AwsError(
            "UnrecognizedClientException", "The security token included in the request is invalid.", 403
        )
    return secret


def _authorization(
    keys: Mapping[str, str], by_name: Mapping[str, list[str]], now: datetime | None
) -> tuple[re.Match[str], str, str]:
    """The Authorization header's parts, its key's secret and the request's date, each checked."""
    auth = (by_name.get("authorization") or [""])[0]
    if not auth:
        raise AwsError("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
    match = _AUTH_RE.match(auth)
    if match is None:
        raise AwsError("IncompleteSignatureException", "Authorization header is not a SigV4 signature", 403)
    secret = _secret(keys, match["akid"])
    amz_date = (by_name.get("x-amz-date") or [""])[0]
    _check_date(amz_date, match["date"], now or datetime.now(UTC))
    return match, secret, amz_date


def verify_request(
    keys: Mapping[str, str],
    *,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Iterable[tuple[str, str]],
    body: bytes | None,
    now: datetime | None = None,
) -> Signed:
    """Check the Authorization header; raise AwsError (403) when it is missing or wrong.

    `body` is the whole request body, or None for an event-stream input signed event by event.
    """
    by_name = _by_name(headers)
    match, secret, amz_date = _authorization(keys, by_name, now)
    canonical_headers = _canonical_headers(by_name, match["signed"])
    declared = (by_name.get("x-amz-content-sha256") or [""])[0]
    if body is None and declared != STREAMING_EVENTS:
        raise AwsError(
            "InvalidSignatureException",
            f"An event stream must be signed event by event: x-amz-content-sha256 must be "
            f"{STREAMING_EVENTS}, got {declared or '(none)'!r}.",
            403,
        )
    payload_hash = STREAMING_EVENTS if body is None else hashlib.sha256(body).hexdigest()
    canonical = "\n".join(
        [
            method.upper(),
            _canonical_path(raw_path),
            _canonical_query(raw_query),
            canonical_headers,
            match["signed"],
            payload_hash,
        ]
    )
    return _checked(secret, match, amz_date, canonical, match["sig"])


def _canonical_headers(by_name: Mapping[str, list[str]], signed: str) -> str:
    return "".join(
        f"{name}:{','.join(' '.join(v.split()) for v in by_name.get(name, []))}\n"
        for name in signed.split(";")
    )


def _checked(secret: str, scope_of: re.Match[str], amz_date: str, canonical: str, signature: str) -> Signed:
    """`signature` over `canonical` with the key of `secret` and the scope's date, region, service."""
    date, region, service = scope_of["date"], scope_of["region"], scope_of["service"]
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = signing_key(secret, date, region, service)
    if not hmac.compare_digest(_hmac(key, to_sign).hex(), signature):
        raise AwsError("InvalidSignatureException", _MISMATCH, 403)
    return Signed(key, scope, amz_date, signature)


_CREDENTIAL_RE = re.compile(
    r"^(?P<akid>[^/\s]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request$"
)
PRESIGNED_PARAMS = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
MAX_EXPIRES_S = 7 * 24 * 3600


def presigned(raw_query: str) -> bool:
    """Whether a request carries its signature in its query (a presigned URL)."""
    return any(pair.partition("=")[0] == "X-Amz-Signature" for pair in raw_query.split("&"))


def verify_presigned(
    keys: Mapping[str, str],
    *,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Iterable[tuple[str, str]],
    now: datetime | None = None,
) -> Signed:
    """Check a presigned URL (botocore's SigV4QueryAuth: the signature and its parameters in the
    query, over an empty body); raise AwsError (403) when it is missing, wrong or expired."""
    now = now or datetime.now(UTC)
    pairs = [pair.partition("=") for pair in raw_query.split("&") if pair]
    params = {unquote(k): unquote(v) for k, _, v in pairs}
    missing = [name for name in PRESIGNED_PARAMS if name not in params]
    if missing or params["X-Amz-Algorithm"] != "AWS4-HMAC-SHA256":
        raise AwsError(
            "IncompleteSignatureException",
            f"A presigned URL needs AWS4-HMAC-SHA256 and {', '.join(PRESIGNED_PARAMS[1:])}; missing "
            f"{', '.join(missing) or 'the algorithm'}",
            403,
        )
    credential = _CREDENTIAL_RE.match(params["X-Amz-Credential"])
    if credential is None:
        raise AwsError(
            "IncompleteSignatureException", "X-Amz-Credential is not a SigV4 credential scope", 403
        )
    secret = _secret(keys, credential["akid"])
    amz_date = params["X-Amz-Date"]
    try:
        signed_at = datetime.strptime(amz_date, _AMZ_DATE).replace(tzinfo=UTC)
        expires = int(params.get("X-Amz-Expires", "900"))
    except ValueError:
        raise AwsError(
            "IncompleteSignatureException", "X-Amz-Date or X-Amz-Expires is malformed", 403
        ) from None
    if amz_date[:8] != credential["date"] or not 0 < expires <= MAX_EXPIRES_S:
        raise AwsError("InvalidSignatureException", "X-Amz-Date or X-Amz-Expires is out of range", 403)
    if now > signed_at + timedelta(seconds=expires):
        raise AwsError("InvalidSignatureException", f"Request has expired ({amz_date} + {expires} s)", 403)
    if signed_at > now + MAX_SKEW:
        raise AwsError("InvalidSignatureException", f"Signature not yet current: {amz_date}", 403)
    canonical_headers = _canonical_headers(_by_name(headers), params["X-Amz-SignedHeaders"])
    unsigned_query = "&".join(f"{k}={v}" for k, _, v in pairs if unquote(k) != "X-Amz-Signature")
    head = [method.upper(), _canonical_path(raw_path), _canonical_query(unsigned_query), canonical_headers]
    # botocore's SigV4QueryAuth hashes the (empty) body; S3-style presigners sign UNSIGNED-PAYLOAD.
    for payload in (EMPTY_SHA256, "UNSIGNED-PAYLOAD"):
        canonical = "\n".join([*head, params["X-Amz-SignedHeaders"], payload])
        with contextlib.suppress(AwsError):
            return _checked(secret, credential, amz_date, canonical, params["X-Amz-Signature"])
    raise AwsError("InvalidSignatureException", _MISMATCH, 403)


def _check_date(amz_date: str, scope_date: str, now: datetime) -> None:
    try:
        signed_at = datetime.strptime(amz_date, _AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        raise AwsError(
            "IncompleteSignatureException",
            "Authorization header requires existence of a valid 'X-Amz-Date' header "
            f"(YYYYMMDD'T'HHMMSS'Z'), got {amz_date or '(none)'!r}.",
            403,
        ) from None
    if amz_date[:8] != scope_date:
        raise AwsError(
            "InvalidSignatureException",
            f"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{scope_date}' != '{amz_date[:8]}', from '{amz_date}'.",
            403,
        )
    stamp = now.strftime(_AMZ_DATE)
    if signed_at < now - MAX_SKEW:
        raise AwsError(
            "InvalidSignatureException",
            f"Signature expired: {amz_date} is now earlier than {(now - MAX_SKEW).strftime(_AMZ_DATE)} "
            f"({stamp} - 15 min.)",
            403,
        )
    if signed_at > now + MAX_SKEW:
        raise AwsError(
            "InvalidSignatureException",
            f"Signature not yet current: {amz_date} is still later than "
            f"{(now + MAX_SKEW).strftime(_AMZ_DATE)} ({stamp} + 15 min.)",
            403,
        )


class EventChain:
    """Verifies the chunk signatures of a signed event stream, envelope after envelope."""

    def __init__(self, signed: Signed) -> None:
        self._signed = signed
        self._prior = signed.signature

    def verify(self, envelope: Message) -> bool:
        date = envelope.headers.get(":date")
        signature = envelope.headers.get(":chunk-signature")
        if not isinstance(date, datetime) or not isinstance(signature, bytes):
            return False
        millis = round(date.timestamp() * 1000)
        header_hash = hashlib.sha256(b"\x05:date\x08" + struct.pack(">q", millis)).hexdigest()
        payload_hash = hashlib.sha256(envelope.payload).hexdigest()
        # The smithy signer stamps `:date` per event but signs with the request's timestamp.
        for stamp in (self._signed.amz_date, date.strftime("%Y%m%dT%H%M%SZ")):
            to_sign = "\n".join(
                [
                    "AWS4-HMAC-SHA256-PAYLOAD",
                    stamp,
                    self._signed.scope,
                    self._prior,
                    header_hash,
                    payload_hash,
                ]
            )
            if hmac.compare_digest(_hmac(self._signed.signing_key, to_sign), signature):
                self._prior = signature.hex()
                return True
        return False
