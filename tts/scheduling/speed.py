"""How fast this machine's decoder is, as the window plan needs it (`plan.py`): measured once at load on
the real engine (`calibration.py`), then moved towards every step the scheduler times (`observe`), so a
busier host gets shorter steps. On an engine that decodes windows of several sessions in one forward
pass (the torch engine's `decode_batch`), also what such a pass costs (`batch_seconds`), which the
scheduler forms batches by (`picking.py`) and the capacity counts (`admission.py`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tts.engines.decode import DecodeFn

# Long enough (about 160 frames) for `DecodeSpeed.measure` to time its windows and lanes.
SPEED_TEXT = "The decoder is timed on this sentence once, so that every step is sized for this machine."
# How far one timed step moves the per-frame estimate towards what it measured: a busy host shows
# within a few steps, one slow step (a page fault, another process) does not halve every plan after it.
SPEED_SMOOTHING = 0.2
# The batched pass `measure` times: this many windows (at most the engine's batch) of BATCH_WIDTH
# frames. On a GPU a pass of a few short windows is bound by launching its kernels, so it would read
# a per-frame cost of about nothing; 16 windows of 40 frames (640 frames, a few tens of milliseconds)
# start to fill it. On a CPU a pass is bound by arithmetic (a frame costs what it costs alone), so two
# windows tell as much: 80 frames, about a second on 2 cores.
GPU_BATCH_WINDOWS = 16
CPU_BATCH_WINDOWS = 2
BATCH_WIDTH = 40


@dataclass
class DecodeSpeed:
    """How long this machine's decoder takes for one step: `call_s + frame_s * n` for one window of `n`
    decoded frames (its context included) on every thread, `call_s + lane_frame_s * n` for windows
    decoded side by side on one-thread lanes, `n` the longest of them; and for `w` windows of any
    sessions in one forward pass, each padded to the longest `n`, `call_s + batch_frame_s * w * n`
    (0: the engine does not batch, or it was not measured). `measure` takes it at load; `observe`
    and `observe_batch` move it towards every step timed after that, so a busier host gets shorter
    steps."""

    call_s: float
    frame_s: float
    lane_frame_s: float
    batch_frame_s: float = 0.0
    # the last timed step's time over its prediction (kept in memory only: not a figure of the machine)
    last_ratio: float = field(default=1.0, compare=False)

    def seconds(self, decoded: Sequence[int]) -> float:
        per_frame = self.frame_s if len(decoded) == 1 else self.lane_frame_s
        return self.call_s + per_frame * max(decoded)

    def batch_seconds(self, decoded: Sequence[int]) -> float:
        """A forward pass over windows of any sessions (`decoded`: each one's frames, its context
        included), each padded to the longest; one window alone: `seconds`."""
        if len(decoded) < 2:
            return self.seconds(decoded)
        return self.call_s + self.batch_frame_s * len(decoded) * max(decoded)

    def observe_batch(self, decoded: Sequence[int], seconds: float) -> None:
        """A timed pass over windows of several sessions (`batch_seconds`)."""
        if len(decoded) < 2:
            self.observe(decoded, seconds)
            return
        self.last_ratio = seconds / max(1e-6, self.batch_seconds(decoded))
        measured = max(0.0, seconds - self.call_s) / (len(decoded) * max(decoded))
        self.batch_frame_s += SPEED_SMOOTHING * (measured - self.batch_frame_s)

    def observe(self, decoded: Sequence[int], seconds: float) -> None:
        self.last_ratio = seconds / max(1e-6, self.seconds(decoded))
        measured = max(0.0, seconds - self.call_s) / max(decoded)
        if len(decoded) == 1:
            self.frame_s += SPEED_SMOOTHING * (measured - self.frame_s)
        else:
            self.lane_frame_s += SPEED_SMOOTHING * (measured - self.lane_frame_s)

    def lately(self, share: float) -> DecodeSpeed:
        """This speed, or slower by what the last timed step took beyond 1 / `share` of its prediction
        (a plan keeps `share` of the time for the predicted step: up to 1 / `share` is a slower step it
        allows for, beyond that the host is busy now: on the local stack, the model, the agent and the
        emulator share Kokoro's 2 cores while an answer is written). For a listener about to start:
        the rest of its answer runs on the host as it is now, so its first audio waits until that
        host can follow it."""
        slowdown = self.last_ratio * share
        if slowdown <= 1:
            return self
        return replace(
            self,
            call_s=self.call_s * slowdown,
            frame_s=self.frame_s * slowdown,
            lane_frame_s=self.lane_frame_s * slowdown,
            batch_frame_s=self.batch_frame_s * slowdown,
        )

    @classmethod
    def measure(
        cls,
        decode: DecodeFn,
        frames: int,
        lanes: int,
        runs: int = 2,
        batch: DecodeFn | None = None,
        batch_windows: int = 0,
    ) -> DecodeSpeed:
        """Time `decode` (an engine's `decode_windows` over one segment of `frames` frames, at least 40)
        on a short and a long window (12 and 40 frames: a first window and a shortest step with its
        context), and on `lanes` windows of 32 side by side; the fastest of `runs` runs of each (after an
        engine's warm-up one is the machine's figure), the lanes always twice: their sessions' first run
        is their own warm-up. With `batch` (the engine's `decode_batch` over ranges of the segment), also
        one forward pass over `batch_windows` windows of BATCH_WIDTH frames (at offsets 7 frames apart)."""
        if frames < 40:
            raise ValueError(f"timing the decoder needs a segment of 40 frames or more, got {frames}")

        def fastest(ranges: list[tuple[int, int]], runs: int, decode: DecodeFn = decode) -> float:
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                decode(ranges)
                times.append(time.perf_counter() - started)
            return min(times)

        short, long = 12, 40
        short_s, long_s = fastest([(0, short)], runs), fastest([(0, long)], runs)
        frame_s = max(1e-4, (long_s - short_s) / (long - short))
        call_s = max(0.0, short_s - frame_s * short)
        lane_frame_s = frame_s
        if lanes > 1:
            width = min(frames // lanes, 32)
            lane_s = fastest([(lane * width, (lane + 1) * width) for lane in range(lanes)], 2)
            lane_frame_s = max(1e-4, (lane_s - call_s) / width)
        batch_frame_s = 0.0
        if batch is not None and batch_windows > 1:
            starts = [n * 7 % (frames - BATCH_WIDTH + 1) for n in range(batch_windows)]
            ranges = [(start, start + BATCH_WIDTH) for start in starts]
            batch_s = fastest(ranges, runs, batch)
            batch_frame_s = max(1e-6, (batch_s - call_s) / (len(ranges) * BATCH_WIDTH))
        return cls(call_s, frame_s, lane_frame_s, batch_frame_s)
