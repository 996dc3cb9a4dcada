"""From a scheduled job to wire frames: slice each segment's PCM into frames of `frame_ms`, encode,
and yield the bytes as soon as they exist, each segment's words (when the request asked for timestamps)
before its audio. Shared by the WebSocket session and `POST /invocations`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from facts import SAMPLE_RATE
from tts.scheduling.admission import EngineBusy, Queued
from tts.scheduling.scheduler import Job
from tts.serving.metrics import Load, RequestClock, publish_error, publish_request
from tts.text.timings import TimedWords
from tts.wire.audio import pcm_samples, pcm_seconds
from tts.wire.encoders import make_encoder


class SynthesisFailed(RuntimeError):
    """The engine raised while computing a segment of this job."""

    code = "synthesis_failed"

    @classmethod
    def of(cls, fault: BaseException, request_id: str) -> SynthesisFailed:
        """What the client is told of `fault`: its kind and where the log keeps it, not its own words,
        which name the replica's internals ("'Segment' object is not subscriptable")."""
        return cls(f"synthesis failed ({type(fault).__name__}; the replica's log has request {request_id})")


class Busy(SynthesisFailed):
    """The replica's line for a slot is full (`tts/scheduling/admission.py`): try again or elsewhere."""

    code = "busy"


class NothingToSpeak(SynthesisFailed):
    """G2P found nothing to say in the text (e.g. only a dash): an error, never a 0-byte success."""

    code = "nothing_to_speak"


@dataclass
class AudioStats:
    samples: int = 0
    audio_bytes: int = 0
    frames: int = 0

    @property
    def duration_s(self) -> float:
        return round(self.samples / SAMPLE_RATE, 3)


async def audio_frames(
    job: Job, frame_bytes: int, stats: AudioStats, load: Load | None = None, places: bool = False
) -> AsyncIterator[bytes | TimedWords | Queued]:
    """Encoded audio of `job`, frame by frame, and each segment's `TimedWords` before the segment's
    first audio; with `places`, the session's place in line (`Queued`) while it waits for a slot.
    Stops early (without flushing) when the job is cancelled. The request's metrics line
    (tts.serving.metrics) is written when it ends, with the scheduler's `load` at first audio and end."""
    encoder = make_encoder(job.request.format)
    clock = RequestClock(job.submitted_at)
    while True:
        item = await job.audio.get()
        if job.cancelled and not isinstance(item, BaseException):
            _ended(job, clock, stats, load)
            return
        if item is None:
            break
        if isinstance(item, Queued):
            if places:
                yield item
            continue
        if isinstance(item, EngineBusy):
            publish_error(Busy.code)
            raise Busy(f"the replica is busy: {item}") from item
        if isinstance(item, BaseException):
            publish_error(SynthesisFailed.code)
            raise SynthesisFailed.of(item, job.request.request_id) from item
        if isinstance(item, TimedWords):
            yield item
            continue
        if clock.audio(pcm_seconds(len(item))) and load is not None:
            clock.load(load())
        stats.samples += pcm_samples(len(item))
        for start in range(0, len(item), frame_bytes):
            data = encoder.encode(item[start : start + frame_bytes])
            if data:
                stats.audio_bytes += len(data)
                stats.frames += 1
                yield data
                clock.sent()  # the consumer asks for the next frame: this one is on its way
    _ended(job, clock, stats, load)
    if stats.samples == 0:
        publish_error(NothingToSpeak.code)
        raise NothingToSpeak(f"nothing to speak in the text: {job.request.text[:40]!r}")
    tail = encoder.flush()
    if tail:
        stats.audio_bytes += len(tail)
        stats.frames += 1
        yield tail


def _ended(job: Job, clock: RequestClock, stats: AudioStats, load: Load | None) -> None:
    clock.started_at = job.started_at
    if stats.samples and clock.first_audio_at is None:
        clock.sent()  # an encoder that held every frame (a short mp3): its tail goes out now
    if load is not None:
        clock.load(load())
    publish_request(clock, stats.samples / SAMPLE_RATE)
