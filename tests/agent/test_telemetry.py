"""A turn's spans and EMF line, from the events of a turn: the spans nest in the turn and add up to its
times, and neither carries the user's text or the answer."""

from __future__ import annotations

import io
import json

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent.telemetry import TurnTelemetry, tracer_provider

# Letters that hex ids and timestamps cannot hold: "4111" can occur by chance in a random span id or a
# timestamp's digits (it did once in this stop's fresh-clone runs) and failed the privacy check.
SECRET = "my card number is quokka"


def turn_events() -> list[dict]:
    return [
        {"type": "agent_start", "t_ms": 0.0, "mode": "bidi", "voice": "jm_kumo"},
        {"type": "text_delta", "t_ms": 420.0, "seq": 0, "text": SECRET},
        {"type": "audio_chunk", "t_ms": 610.0, "seq": 0, "data": "AAAA", "sentence": 0},
        {"type": "audio_chunk", "t_ms": 900.0, "seq": 1, "data": "AAAA", "sentence": 0},
        {"type": "words", "t_ms": 905.0, "seq": 1, "words": [{"text": SECRET, "start_ms": 0, "end_ms": 300}]},
        {"type": "audio_chunk", "t_ms": 1200.0, "seq": 2, "data": "AAAA", "sentence": 1},
        {"type": "interrupted", "t_ms": 1300.0, "played_ms": 500, "heard": SECRET},
        {"type": "agent_end", "t_ms": 1350.0, "ok": True},
    ]


def run_turn() -> tuple[list, str]:
    exporter = InMemorySpanExporter()
    provider = tracer_provider(exporter)
    out = io.StringIO()
    telemetry = TurnTelemetry(provider, out=out)
    for event in turn_events():
        telemetry.observe(event)
    telemetry.end()
    provider.force_flush()
    return list(exporter.get_finished_spans()), out.getvalue()


def test_the_spans_nest_in_the_turn_and_add_up_to_its_times():
    spans, _ = run_turn()
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (root,) = by_name["voice.turn"]
    assert {name: len(found) for name, found in by_name.items()} == {
        "voice.turn": 1,
        "model.first_token": 1,
        "speech.first_audio": 1,
        "speech.sentence": 2,
        "turn.interrupt": 1,
    }

    def ms(span, at: int) -> float:
        return (at - root.start_time) / 1e6

    assert ms(root, root.end_time) == 1350.0
    assert ms(root, by_name["model.first_token"][0].end_time) == 420.0
    assert ms(root, by_name["speech.first_audio"][0].end_time) == 610.0
    sentences = sorted(by_name["speech.sentence"], key=lambda s: s.start_time)
    assert [(ms(root, s.start_time), ms(root, s.end_time)) for s in sentences] == [
        (610.0, 900.0),
        (1200.0, 1200.0),
    ]
    assert ms(root, by_name["turn.interrupt"][0].start_time) == 1300.0
    for span in spans:
        assert span.context.trace_id == root.context.trace_id
        assert span is root or span.parent.span_id == root.context.span_id
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time


def test_no_span_or_metric_carries_the_users_text():
    spans, emf = run_turn()
    exported = json.dumps([json.loads(span.to_json()) for span in spans])
    assert "quokka" not in exported and "quokka" not in emf
    (line,) = [json.loads(x) for x in emf.splitlines()]
    assert (line["TimeToFirstToken"], line["TimeToFirstAudio"], line["Sentences"], line["Interrupts"]) == (
        420.0,
        610.0,
        2,
        1,
    )
    assert line["Service"] == "agent" and line["TurnSeconds"] == 1.35


def test_without_an_endpoint_nothing_is_exported_and_a_cut_turn_writes_nothing(monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert tracer_provider() is None
    out = io.StringIO()
    telemetry = TurnTelemetry(None, out=out)
    for event in turn_events()[:-1]:  # the client went away before agent_end
        telemetry.observe(event)
    telemetry.end()
    assert out.getvalue() == ""
