"""A turn's timings as OpenTelemetry spans (OTLP/HTTP, the way AgentCore observability reads them through
ADOT) and as one EMF line on stdout, both built from the turn's own events after it ends.

Spans, on the events' clock (`t_ms` since the turn started): `voice.turn` from the start to `agent_end`,
and inside it `model.first_token` (start to the first `text_delta`), `speech.first_audio` (start to the
first `audio_chunk`), one `speech.sentence` per sentence handed to speech (its first audio chunk to its
last), and `turn.interrupt` where the listener barged in. The exporter is the SDK's OTLP/HTTP one,
configured by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT` or `..._TRACES_ENDPOINT`,
`OTEL_SERVICE_NAME`, else facts.AGENT_RUNTIME); with neither endpoint set nothing is exported. The
provider is this module's own (not the global one), so Strands' own instrumentation is left as it is.

The EMF line (namespace facts.METRICS_NAMESPACE, `Service=agent`): TimeToFirstToken, TimeToFirstAudio
(ms), TurnSeconds, Sentences, Interrupts. Neither carries the user's text or the answer: only times,
counts, the mode and the voice.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

from aws_embedded_metrics.logger.metrics_context import MetricsContext
from aws_embedded_metrics.serializers.log_serializer import LogSerializer
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from agent.events import Event
from facts import AGENT_RUNTIME, FIRST_AUDIO_METRIC, METRICS_NAMESPACE

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SERVICE = {"Service": "agent"}


def tracer_provider(exporter: SpanExporter | None = None) -> TracerProvider | None:
    """The provider exporting over OTLP/HTTP when an endpoint variable is set (or to `exporter`)."""
    if exporter is None:
        if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
            return None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    name = os.environ.get("OTEL_SERVICE_NAME") or AGENT_RUNTIME
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class TurnTelemetry:
    """Watches one turn's events; `end()` writes its spans and its EMF line."""

    def __init__(self, provider: TracerProvider | None, out: IO[str] | None = None) -> None:
        self._provider = provider
        self._out = out
        self._start_ns = time.time_ns()
        self._mode: str | None = None
        self._voice: str | None = None
        self._first_token: float | None = None
        self._first_audio: float | None = None
        self._sentences: dict[int, list[float]] = {}
        self._interrupts: list[float] = []
        self._end: float | None = None
        self._ok = True

    def observe(self, event: Event) -> None:
        kind, t = event.get("type"), float(event.get("t_ms", 0.0))
        if kind == "agent_start":
            self._mode, self._voice = event.get("mode"), event.get("voice")
        elif kind == "text_delta" and self._first_token is None:
            self._first_token = t
        elif kind == "audio_chunk":
            if self._first_audio is None:
                self._first_audio = t
            sentence = event.get("sentence")
            if isinstance(sentence, int):
                span = self._sentences.setdefault(sentence, [t, t])
                span[1] = t
        elif kind == "interrupted":
            self._interrupts.append(t)
        elif kind == "agent_end":
            self._end, self._ok = t, bool(event.get("ok", True))

    def end(self) -> None:
        if self._end is None:
            return  # the client went away before the turn ended: no figures to trust
        self._spans()
        self._metrics()

    def _ns(self, t_ms: float) -> int:
        return self._start_ns + int(t_ms * 1_000_000)

    def _spans(self) -> None:
        if self._provider is None:
            return
        tracer = self._provider.get_tracer("agent.telemetry")
        attributes: dict[str, Any] = {"voice.ok": self._ok}
        if self._mode:
            attributes["voice.mode"] = self._mode
        if self._voice:
            attributes["voice.voice"] = self._voice
        root = tracer.start_span("voice.turn", start_time=self._ns(0), attributes=attributes)
        context = trace.set_span_in_context(root)

        def child(name: str, start: float, end: float, **attrs: Any) -> None:
            span = tracer.start_span(name, context=context, start_time=self._ns(start), attributes=attrs)
            span.end(end_time=self._ns(end))

        if self._first_token is not None:
            child("model.first_token", 0, self._first_token)
        if self._first_audio is not None:
            child("speech.first_audio", 0, self._first_audio)
        for index, (first, last) in sorted(self._sentences.items()):
            child("speech.sentence", first, last, **{"voice.sentence": index})
        for at in self._interrupts:
            child("turn.interrupt", at, at)
        root.end(end_time=self._ns(self._end or 0))

    def _metrics(self) -> None:
        context = MetricsContext.empty()
        context.namespace = METRICS_NAMESPACE
        context.set_dimensions([dict(SERVICE)], use_default=False)
        if self._first_token is not None:
            context.put_metric("TimeToFirstToken", self._first_token, "Milliseconds")
        if self._first_audio is not None:
            context.put_metric(FIRST_AUDIO_METRIC, self._first_audio, "Milliseconds")
        context.put_metric("TurnSeconds", round((self._end or 0) / 1000, 3), "Seconds")
        context.put_metric("Sentences", len(self._sentences), "Count")
        context.put_metric("Interrupts", len(self._interrupts), "Count")
        stream = self._out or sys.stdout
        for line in LogSerializer.serialize(context):
            stream.write(line + "\n")
        stream.flush()
