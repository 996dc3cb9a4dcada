"""The container's EMF lines: what a request's audio timings become, and that no line carries the text.

The job is fed by hand (no engine): the timings under test are the order and spacing of its decoder steps,
and the lines are what CloudWatch Logs would extract metrics from (the `_aws` directive)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

from facts import FIRST_AUDIO_METRIC, METRICS_NAMESPACE, OVER_CAPACITY_METRIC, PCM_BYTES_PER_S, STALLS_METRIC
from tts.scheduling.scheduler import Job
from tts.serving.metrics import RequestClock, publish_error, publish_request
from tts.serving.streaming import AudioStats, NothingToSpeak, audio_frames
from tts.wire.protocol import Synthesize

SECRET = "my bank password is hunter2"


def emf(text: str) -> list[dict]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        directive = line["_aws"]["CloudWatchMetrics"][0]
        assert directive["Namespace"] == METRICS_NAMESPACE
        for metric in directive["Metrics"]:
            assert metric["Name"] in line, "every declared metric has its value in the line"
    return lines


def test_a_step_after_the_listener_ran_out_is_a_stall_and_first_audio_is_from_submit():
    clock = RequestClock(submitted_at=10.0, started_at=10.1)  # a worker took it up after 100 ms
    assert clock.audio(0.5, now=10.25)  # the first step, 250 ms after submit; plays until 10.75
    clock.sent(now=10.3)  # its first frame goes out 50 ms later: first audio at 300 ms
    clock.sent(now=10.4)
    assert not clock.audio(0.5, now=10.7)  # in time: plays until 11.25
    clock.audio(0.5, now=11.45)  # 200 ms after the listener ran out
    clock.audio(0.5, now=11.955)  # 5 ms late: under one frame, not a stall
    clock.load({"sessions": 3, "capacity": 2, "saturated": True})
    out = io.StringIO()
    publish_request(clock, audio_s=2.0, out=out)
    (line,) = emf(out.getvalue())
    assert line[FIRST_AUDIO_METRIC] == 300.0 and line["QueueWait"] == 100.0
    assert line[STALLS_METRIC] == 1 and abs(line["StallSeconds"] - 0.2) < 1e-6
    assert line[OVER_CAPACITY_METRIC] == 1 and line["SessionsActive"] == 3 and line["Capacity"] == 2
    assert line["Service"] == "tts"


def test_a_request_without_audio_writes_no_request_line_and_an_error_has_only_its_code():
    out = io.StringIO()
    publish_request(RequestClock(submitted_at=0.0), audio_s=0.0, out=out)
    publish_error("nothing_to_speak", out=out)
    (line,) = emf(out.getvalue())
    assert line["ErrorCode"] == "nothing_to_speak" and line["Errors"] == 1
    assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Service"], ["Service", "ErrorCode"]]


def job(text: str) -> Job:
    return Job(owner="session", request=Synthesize(text, "jm_kumo", 1.0, "pcm", "en-us", "r1"))


async def drain(synth: Job, steps: list[bytes | None]) -> list[bytes]:
    synth.started_at = synth.submitted_at + 0.05  # as a worker would when it takes the job up
    for step in steps:
        synth.audio.put_nowait(step)
    frames = audio_frames(synth, 960, AudioStats(), lambda: {"sessions": 1, "capacity": 4})
    return [frame async for frame in frames if isinstance(frame, bytes)]


async def test_a_streamed_request_writes_one_line_with_no_text_in_it():
    out = io.StringIO()
    with redirect_stdout(out):
        frames = await drain(job(SECRET), [b"\0" * PCM_BYTES_PER_S, b"\0" * PCM_BYTES_PER_S, None])
    assert len(frames) == 100  # 2 s of 20 ms frames, and still one line
    (line,) = emf(out.getvalue())
    assert line["AudioSeconds"] == 2.0 and line[OVER_CAPACITY_METRIC] == 0 and line["QueueWait"] == 50.0
    assert "hunter2" not in out.getvalue() and "r1" not in json.dumps(line)


async def test_nothing_to_speak_is_counted_by_code_without_the_text():
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            await drain(job(SECRET), [None])
        except NothingToSpeak:
            pass
        else:
            raise AssertionError("a request with no audio must fail")
    (line,) = emf(out.getvalue())
    assert line["ErrorCode"] == "nothing_to_speak"
    assert "hunter2" not in out.getvalue()


def test_the_lines_do_not_wait_in_a_buffer():
    """A redirected stdout is block-buffered: each line is flushed as written (the emulator and
    CloudWatch Logs read the replica's output as it comes)."""

    class Unflushed(io.StringIO):
        flushed = 0

        def flush(self) -> None:
            self.flushed += 1

    out = Unflushed()
    publish_error("bad_message", out=out)
    assert out.flushed == 1
