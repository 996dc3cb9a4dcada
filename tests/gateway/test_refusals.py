"""Every refusal of the gateway's own is OpenAI's error envelope, whatever refuses it (#49: an over-long
body came back in another envelope): the body's shape and size, a path or method it does not serve, a
`Host` it is not reached by (DNS rebinding), an endpoint it cannot reach, an unexpected failure. Served
in process over real boto3 (no endpoint needed: each is refused before one, or by the connection)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from emulator.processes import free_port
from gateway.front import MAX_BODY_BYTES
from gateway.routes import create_app
from gateway.sagemaker import Answer, SageMakerEndpoints
from host_guard import allowed_hosts

SPEECH = {"model": "tts-1", "input": "Hello.", "voice": "jm_kumo"}


@pytest.fixture
def unreachable(monkeypatch: pytest.MonkeyPatch) -> SageMakerEndpoints:
    """boto3 pointed at a port nothing listens on, without retries."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    return SageMakerEndpoints("us-east-1")


def gateway(sagemaker: SageMakerEndpoints, bind: str = "127.0.0.1") -> TestClient:
    app = create_app(["kokoro-82m"], sagemaker, allowed_hosts(bind, []))
    return TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False)


def openai_error(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")
    return error


@pytest.mark.parametrize(
    ("body", "code"),
    [(b"{", "invalid_json"), (b"[1]", "not_an_object"), (b'{"voice": "af"}', "missing_text")],
)
def test_a_body_that_cannot_be_speech(unreachable: SageMakerEndpoints, body: bytes, code: str) -> None:
    openai_error(gateway(unreachable).post("/v1/audio/speech", content=body), 400, code)


def test_an_over_long_body_is_refused_whether_it_declares_its_length_or_not(
    unreachable: SageMakerEndpoints,
) -> None:
    client = gateway(unreachable)
    over = b" " * (MAX_BODY_BYTES + 1)
    openai_error(client.post("/v1/audio/speech", content=over), 413, "body_too_large")

    def chunked() -> Iterator[bytes]:  # no Content-Length: refused once the read passes the limit
        for _ in range(8):
            yield b" " * (1024 * 1024)

    openai_error(client.post("/dev/captioned_speech", content=chunked()), 413, "body_too_large")


def test_what_the_gateway_does_not_serve(unreachable: SageMakerEndpoints) -> None:
    client = gateway(unreachable)
    assert (
        "Invalid URL (GET /v1/audio/transcriptions)"
        in openai_error(client.get("/v1/audio/transcriptions"), 404, "unknown_url")["message"]
    )
    openai_error(client.get("/v1/audio/speech"), 405, "method_not_allowed")
    error = openai_error(
        client.post("/v1/audio/speech", json={**SPEECH, "model": "gpt-4o"}), 404, "model_not_found"
    )
    assert "kokoro-82m" in error["message"]


def test_a_rebound_name_is_refused_before_any_route(unreachable: SageMakerEndpoints) -> None:
    """Another site's page whose name was re-pointed at 127.0.0.1 (DNS rebinding) gets nothing, though
    its Origin matches its Host; the names that reach a loopback gateway are served."""
    client = gateway(unreachable)
    rebound = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    error = openai_error(client.get("/v1/models", headers=rebound), 400, "unknown_host")
    assert "--allowed-host" in error["message"]
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000"):
        assert client.get("/v1/models", headers={"Host": host}).status_code == 200
    assert gateway(unreachable, bind="0.0.0.0").get("/v1/models", headers=rebound).status_code == 200


def test_an_endpoint_it_cannot_reach_is_a_502(unreachable: SageMakerEndpoints) -> None:
    client = gateway(unreachable)
    openai_error(client.post("/v1/audio/speech", json=SPEECH), 502, "endpoint_unreachable")
    openai_error(client.get("/v1/audio/voices"), 502, "endpoint_unreachable")


class Failing(SageMakerEndpoints):
    """An endpoint call that fails in a way nobody planned for."""

    def stream(self, endpoint: str, body: bytes) -> Answer:
        raise RuntimeError("boom")


def test_an_unexpected_failure_is_a_500_in_openais_envelope(unreachable: SageMakerEndpoints) -> None:
    response = gateway(Failing("us-east-1")).post("/v1/audio/speech", json=SPEECH)
    assert "RuntimeError" in openai_error(response, 500, "internal_error")["message"]
