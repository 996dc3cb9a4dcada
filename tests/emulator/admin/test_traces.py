"""The emulator's trace collector, fed by the OpenTelemetry SDK's own OTLP/HTTP exporter (protobuf), as
the agent replica sends its turns, and by OTLP/JSON; read back as traces and as a timeline."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from agent.telemetry import TurnTelemetry, tracer_provider
from emulator.cli.views import timeline
from emulator.server import Emulator, emulator_in_thread
from tests.emulator.support import fast_config, manifest


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with emulator_in_thread(fast_config(tmp_path_factory.mktemp("traces")), manifest([])) as running:
        yield running


def traces(emu: Emulator) -> list[dict]:
    return httpx.get(f"{emu.http_url}/_emulator/traces", params={"limit": 50}, trust_env=False).json()


def test_a_turn_exported_over_otlp_protobuf_is_a_timeline(emu: Emulator):
    provider = tracer_provider(OTLPSpanExporter(endpoint=f"{emu.http_url}/_emulator/otlp/v1/traces"))
    telemetry = TurnTelemetry(provider, out=io.StringIO())
    for event in (
        {"type": "agent_start", "t_ms": 0.0, "mode": "bidi", "voice": "jm_kumo"},
        {"type": "text_delta", "t_ms": 300.0, "seq": 0, "text": "hello"},
        {"type": "audio_chunk", "t_ms": 500.0, "seq": 0, "data": "", "sentence": 0},
        {"type": "agent_end", "t_ms": 800.0, "ok": True},
    ):
        telemetry.observe(event)
    telemetry.end()
    assert provider.force_flush()
    (trace,) = [t for t in traces(emu) if any(s["name"] == "voice.turn" for s in t["spans"])]
    spans = {s["name"]: s for s in trace["spans"]}
    assert spans["voice.turn"]["duration_ms"] == 800.0 and spans["voice.turn"]["service"] == "voice_agent"
    assert spans["speech.first_audio"]["duration_ms"] == 500.0
    assert spans["model.first_token"]["parent_id"] == spans["voice.turn"]["span_id"]
    assert spans["voice.turn"]["attributes"]["voice.mode"] == "bidi"
    shown = timeline(trace)
    assert "voice.turn" in shown and "speech.first_audio" in shown and "800 ms" in shown


def test_otlp_json_is_read_and_a_bad_body_is_a_clear_400(emu: Emulator):
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "json-client"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5B8EFFF798038103D269B633813FC60C",
                                "spanId": "EEE19B7EC3C1B174",
                                "name": "json.span",
                                "startTimeUnixNano": "1000000000",
                                "endTimeUnixNano": "1250000000",
                                "attributes": [{"key": "n", "value": {"intValue": "3"}}],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    url = f"{emu.http_url}/_emulator/otlp/v1/traces"
    answer = httpx.post(
        url, content=json.dumps(body), headers={"content-type": "application/json"}, trust_env=False
    )
    assert answer.status_code == 200
    (span,) = [s for t in traces(emu) for s in t["spans"] if s["name"] == "json.span"]
    assert (span["trace_id"], span["duration_ms"], span["attributes"], span["service"]) == (
        "5b8efff798038103d269b633813fc60c",
        250.0,
        {"n": 3},
        "json-client",
    )
    for content_type, raw in (("application/x-protobuf", b"\xff\xff\xff"), ("application/json", b"{")):
        refused = httpx.post(url, content=raw, headers={"content-type": content_type}, trust_env=False)
        assert refused.status_code == 400 and "OTLP" in refused.json()["error"]


def test_agentcore_gives_each_runtime_the_collector(emu: Emulator):
    """The SDK's exporter adds /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT: the route above."""
    assert (
        emu.services.agentcore.platform_env["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"{emu.http_url}/_emulator/otlp"
    )
