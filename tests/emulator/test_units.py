"""The emulator's small pure parts: config parsing, manifests, image names, knobs, SigV4."""

from __future__ import annotations

import asyncio
import datetime
import random
from pathlib import Path
from typing import Any

import pytest
from aws_sdk_signers import AsyncEventSigner
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from smithy_aws_core.identity import AWSCredentialsIdentity
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage

from emulator.config import ConfigError, EmulatorConfig
from emulator.controller.runtimes.process import image_key_candidates
from emulator.manifest import DEFAULT_MANIFEST, Manifest, ManifestError, load_manifest
from emulator.wire import eventstream
from emulator.wire.awserrors import AwsError
from emulator.wire.fidelity import Delay, Rechunker
from emulator.wire.sigv4 import EventChain, Signed, signing_key, verify_request


def test_config_from_env_parses_every_kind_of_field() -> None:
    config = EmulatorConfig.from_env(
        {
            "EMULATOR_HTTP_PORT": "9000",
            "EMULATOR_LATENCY_OUT_MS": "12.5",
            "EMULATOR_RECHUNK": "1-64",
            "EMULATOR_SIGV4_KEYS": "AKID1:s1,AKID2:s2",
            "EMULATOR_HOME": "/tmp/x",
            "EMULATOR_UNFRAGMENTED_COMPLETION_STATE": "absent",
            "EMULATOR_CLOSE_1000_IS_ERROR": "true",
            "EMULATOR_LLM_FIRST_TOKEN_MS": "100",
        }
    )
    assert config.http_port == 9000 and config.latency_out_ms == 12.5 and config.rechunk == (1, 64)
    assert config.sigv4_keys == {"AKID1": "s1", "AKID2": "s2"} and config.home == Path("/tmp/x")
    assert config.unfragmented_completion_state is None and config.close_1000_is_error
    assert config.llm_first_token_ms == 100


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EMULATOR_HTTP_PORT", "eighty"),
        ("EMULATOR_RECHUNK", "5-2"),
        ("EMULATOR_SIGV4_KEYS", "no-secret"),
        ("EMULATOR_IMAGES", "[1]"),
    ],
)
def test_bad_config_values_are_config_errors(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        EmulatorConfig.from_env({name: value})


def test_shipped_manifests_load() -> None:
    for path in DEFAULT_MANIFEST.parent.glob("*.yaml"):
        if "resources" in path.read_text():
            manifest = load_manifest(path)
            # empty.yaml is an emulator with nothing in it, for `deploy aws --target local` to fill
            assert manifest.endpoints or path.name == "empty.yaml", path


def test_default_manifest_is_the_kokoro_endpoint() -> None:
    manifest = load_manifest(DEFAULT_MANIFEST)
    assert manifest.endpoints == ["kokoro-82m"]
    model = next(r for r in manifest.resources if r.kind == "Model")
    assert model.spec["PrimaryContainer"]["Environment"] == {"TTS_VOICE": "jm_kumo"}
    config = next(r for r in manifest.resources if r.kind == "EndpointConfig")
    assert config.spec["ProductionVariants"][0]["InstanceType"] == "ml.g5.xlarge"


@pytest.mark.parametrize(
    "obj",
    ["text", {"resources": [{"kind": "Pod", "spec": {}}]}, {"extra": 1}, {"images": {"x": {"cmd": "no"}}}],
)
def test_malformed_manifests_are_manifest_errors(obj: object) -> None:
    with pytest.raises(ManifestError):
        Manifest.from_obj(obj)


def test_unreadable_manifest_is_a_manifest_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("resources: [unclosed")
    with pytest.raises(ManifestError, match="not valid YAML"):
        load_manifest(tmp_path / "bad.yaml")
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    "image",
    [
        "kokoro-tts",
        "voice-agent-aws/kokoro-tts:latest",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts:1.0",
        "localhost:5000/team/kokoro-tts@sha256:abc",
    ],
)
def test_image_names_match_their_repository(image: str) -> None:
    assert "kokoro-tts" in image_key_candidates(image)


def test_delay_keeps_order_and_adds_latency() -> None:
    delay = Delay(latency_ms=50, jitter_ms=40, rng=random.Random(1))
    dues = [delay.due(arrived=t / 1000) for t in range(0, 100, 5)]
    assert dues == sorted(dues)
    assert all(due >= t / 1000 + 0.010 for due, t in zip(dues, range(0, 100, 5), strict=True))
    assert not Delay(0, 0).active


def test_rechunker_splits_at_arbitrary_boundaries() -> None:
    data = bytes(range(256)) * 4
    parts = Rechunker((1, 7), seed=3).split(data)
    assert b"".join(parts) == data and all(1 <= len(p) <= 7 for p in parts)
    assert Rechunker(None).split(data) == [data]


def test_response_streams_are_split_by_default_and_repeatably() -> None:
    config = EmulatorConfig.from_env({})
    first, again = (
        Rechunker(config.rechunk, config.rechunk_seed),
        Rechunker(config.rechunk, config.rechunk_seed),
    )
    writes = [b'data: {"n": 1}\n\n', b"x", b"ab", bytes(range(256)) * 40]
    for write in writes:
        parts = first.split(write)
        assert b"".join(parts) == write and parts == again.split(write)
        assert len(parts) >= 2 or len(write) == 1, "every write of two bytes or more is cut"
        assert 2 <= len(parts) <= 4 or len(write) < 3
    assert "arbitrary" in first.describe() and "seed 0" in first.describe()
    assert EmulatorConfig.from_env({"EMULATOR_RECHUNK": "off"}).rechunk is None
    assert Rechunker(None).describe().startswith("off")
    assert Rechunker((1, 64), 5).describe() == "parts of 1-64 bytes (seed 5)"


def test_status_says_how_response_streams_are_split() -> None:
    from emulator.status_view import format_status

    info = {
        "pid": 1,
        "http_url": "u",
        "h2_url": "h",
        "runtime": "process",
        "rechunk": "off (one part per container write)",
    }
    out = format_status({"emulator": info, "endpoints": [], "events": []})
    assert "response streams split: off (one part per container write)" in out


def test_logs_cover_the_replicas_of_endpoints_and_agent_runtimes(tmp_path: Path) -> None:
    from emulator.status_view import format_logs, replicas

    def replica(name: str) -> dict[str, Any]:
        log = tmp_path / f"{name}.log"
        log.write_text("".join(f"{name} line {i}\n" for i in range(10)))
        return {"id": name, "ident": f"pid {len(name)}", "log": str(log)}

    status = {
        "endpoints": [{"name": "tts", "replicas": [replica("tts-a"), replica("tts-b")]}],
        "agent_runtimes": [{"name": "agent", "replicas": [replica("agent-v1")]}],
    }
    every = replicas(status)
    assert [r["id"] for r in every] == ["tts-a", "tts-b", "agent-v1"]
    out = format_logs(every, 2).splitlines()
    assert out[6] == f"==> agent-v1 (pid 8) {tmp_path / 'agent-v1.log'} <=="
    assert out[7:] == ["agent-v1 line 8", "agent-v1 line 9"]


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


def test_status_shows_each_replicas_load_and_saturation() -> None:
    from emulator.status_view import format_status

    def replica(name: str, load: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "id": name,
            "variant": "AllTraffic",
            "deployment": "current",
            "phase": "Running",
            "ready": True,
            "restarts": 0,
            "sessions": 4,
            "port": 8080,
            "ident": "pid 1",
            "started": None,
            "load": load,
        }

    endpoint = {
        "name": "tts",
        "status": "InService",
        "config": "tts",
        "created": None,
        "variants": [],
        "replicas": [
            replica("tts-a", {"sessions": 4, "capacity": 3, "saturated": True}),
            replica("tts-b", {"sessions": 2, "capacity": 3, "saturated": False}),
            replica("tts-c", None),
        ],
    }
    info = {"pid": 1, "http_url": "u", "h2_url": "h", "runtime": "process"}
    rows = {
        line.split()[0]: line
        for line in format_status({"emulator": info, "endpoints": [endpoint], "events": []}).splitlines()
        if line.strip()
    }
    assert "LOAD" in rows["REPLICA"]
    assert "4/3 SATURATED" in rows["tts-a"]
    assert "2/3" in rows["tts-b"] and "SATURATED" not in rows["tts-b"]
    assert "SATURATED" not in rows["tts-c"]


async def test_the_status_reads_each_ready_replicas_load_from_its_ping() -> None:
    """admin.replica_loads asks every ready endpoint replica's /ping; one that says nothing of its load,
    answers no JSON object or does not answer is left out (the status then shows "-")."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from emulator.admin import replica_loads
    from emulator.processes import free_port

    load = {"sessions": 4, "capacity": 3, "saturated": True}
    servers = []

    def replica(name: str, answer: object, ready: bool = True) -> SimpleNamespace:
        class Ping(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Ping)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return SimpleNamespace(id=name, ready=ready, address=server.server_address)

    try:
        replicas = [
            replica("loaded", {"status": "ok", "load": load}),
            replica("silent", {"status": "ok"}),
            replica("a-list", [1, 2]),
            replica("not-ready", {"status": "ok", "load": load}, ready=False),
            SimpleNamespace(id="gone", ready=True, address=("127.0.0.1", free_port())),
        ]
        deployment = SimpleNamespace(replicas=lambda: replicas)
        store = SimpleNamespace(endpoints={"tts": SimpleNamespace(current=deployment, pending=None)})
        assert await replica_loads(store) == {"loaded": load}
    finally:
        for server in servers:
            server.shutdown()
