"""The container's numbers as CloudWatch Embedded Metric Format: one JSON line on stdout per request that
ended and per typed error, never one per frame.

On SageMaker the container's stdout goes to CloudWatch Logs, which turns each EMF line into metrics with
no agent and no extra permission; the emulator reads the same lines from every replica's log. The lines
are built by the official `aws-embedded-metrics` library (its context and serializer); its environment
detection is left out, because outside Lambda it probes the EC2 metadata address on first flush, and its
stdout sink does not flush, so a line would wait in the block buffer of a redirected stdout.

Per request (namespace facts.METRICS_NAMESPACE, dimension `Service=tts`): TimeToFirstAudio (ms, from
the request reaching the scheduler to its first audio frame handed to the transport), QueueWait (ms,
from the request reaching the scheduler to a decoder worker taking it up: what first audio spent behind
other sessions' steps), AudioSeconds,
RealTimeFactor (wall time over audio time, from submit to the last audio), Stalls and StallSeconds (a
decoder step that came after a listener playing from the first audio in real time had run out),
SessionsActive, Capacity and SessionsOverCapacity (the scheduler's `/ping` load, the most seen at
first audio and at the end). Per error: Errors, under `Service` and under `Service` and `ErrorCode`.
Nothing of the text, the voice or the request id is written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO

from aws_embedded_metrics.logger.metrics_context import MetricsContext
from aws_embedded_metrics.serializers.log_serializer import LogSerializer

from facts import ERRORS_METRIC, FIRST_AUDIO_METRIC, METRICS_NAMESPACE, OVER_CAPACITY_METRIC, STALLS_METRIC

SERVICE = {"Service": "tts"}

STALL_MIN_S = 0.02
"""A gap under one 20 ms frame is absorbed by the smallest client jitter buffer: not a stall."""

Load = Callable[[], Mapping[str, object] | None]


@dataclass
class RequestClock:
    """One request's timings: when its decoder steps became ready, against a listener playing them in
    real time from the first, and when its first audio frame was handed to the transport."""

    submitted_at: float
    first_audio_at: float | None = None
    """The first frame handed to the transport: what a client measures, less the network (and, on a
    session, after any wait for the listener to play the previous request)."""
    first_step_at: float | None = None
    started_at: float | None = None
    """A decoder worker first took the request up (the scheduler's `Job.started_at`): the request waited
    in the queue before it, behind other sessions' steps."""
    played_until: float = 0.0
    last_audio_at: float = 0.0
    stalls: int = 0
    stall_s: float = 0.0
    peak_sessions: int = 0
    capacity: int | None = None

    def audio(self, seconds: float, now: float | None = None) -> bool:
        """A decoder step's `seconds` of audio is ready; True when it is the request's first."""
        now = time.perf_counter() if now is None else now
        first = self.first_step_at is None
        if first:
            self.first_step_at = self.played_until = now
        elif now - self.played_until > STALL_MIN_S:
            self.stalls += 1
            self.stall_s += now - self.played_until
        self.played_until = max(self.played_until, now) + seconds
        self.last_audio_at = now
        return first

    def sent(self, now: float | None = None) -> None:
        """An audio frame went to the transport (only the first one counts)."""
        if self.first_audio_at is None:
            self.first_audio_at = time.perf_counter() if now is None else now

    def load(self, load: Mapping[str, object] | None) -> None:
        if not load:
            return
        sessions, capacity = load.get("sessions"), load.get("capacity")
        if isinstance(sessions, int):
            self.peak_sessions = max(self.peak_sessions, sessions)
        if isinstance(capacity, int):
            self.capacity = capacity


def _context(*dimension_sets: Mapping[str, str]) -> MetricsContext:
    context = MetricsContext.empty()
    context.namespace = METRICS_NAMESPACE
    context.set_dimensions([dict(dimensions) for dimensions in dimension_sets], use_default=False)
    return context


def _write(context: MetricsContext, out: IO[str] | None) -> None:
    stream = out or sys.stdout
    for line in LogSerializer.serialize(context):
        stream.write(line + "\n")
    stream.flush()


def publish_request(clock: RequestClock, audio_s: float, out: IO[str] | None = None) -> None:
    """One request's line; nothing when it sent no audio (its error, if any, has its own line)."""
    if clock.first_audio_at is None or audio_s <= 0:
        return
    context = _context(SERVICE)
    context.put_metric(
        FIRST_AUDIO_METRIC, round((clock.first_audio_at - clock.submitted_at) * 1000, 1), "Milliseconds"
    )
    if clock.started_at is not None:
        context.put_metric(
            "QueueWait", round((clock.started_at - clock.submitted_at) * 1000, 1), "Milliseconds"
        )
    context.put_metric("AudioSeconds", round(audio_s, 3), "Seconds")
    context.put_metric("RealTimeFactor", round((clock.last_audio_at - clock.submitted_at) / audio_s, 3))
    context.put_metric(STALLS_METRIC, clock.stalls, "Count")
    context.put_metric("StallSeconds", round(clock.stall_s, 3), "Seconds")
    context.put_metric("SessionsActive", clock.peak_sessions, "Count")
    if clock.capacity is not None:
        context.put_metric("Capacity", clock.capacity, "Count")
        context.put_metric(OVER_CAPACITY_METRIC, max(0, clock.peak_sessions - clock.capacity), "Count")
    _write(context, out)


def publish_error(code: str, out: IO[str] | None = None) -> None:
    """One typed error (the stable code of tts.wire.protocol, never its message), counted under the
    service (what an error alarm watches) and under the service and the code (what a dashboard splits)."""
    context = _context(SERVICE, {**SERVICE, "ErrorCode": code})
    context.put_metric(ERRORS_METRIC, 1, "Count")
    _write(context, out)
