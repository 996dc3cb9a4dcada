"""The decode queue (stt/serving/model_host.py): one decode at a time, a live stream's finals first, then
its partials, then a whole clip's windows, so a clip never holds a live transcript for more than one
window; and a clip's windows cover it, each under Whisper's window, cut where it is quiet."""

from __future__ import annotations

import asyncio
import itertools
import time

import numpy as np

from facts import STT_SAMPLE_RATE
from stt.config import STTConfig
from stt.engines.whisper import Transcript
from stt.serving.model_host import CLIP_WINDOW_S, ModelHost, clip_windows
from stt.wire.protocol import Word


class RecordingTranscriber:
    """Stands in for Whisper: each decode takes `seconds` and is recorded with its length and offset."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls: list[tuple[str, int]] = []

    def transcribe(self, samples: np.ndarray, *, words: bool, offset_ms: int = 0) -> Transcript:
        label = "word" if words else "partial"
        self.calls.append((f"{label}:{len(samples)}", offset_ms))
        time.sleep(self.seconds)
        return Transcript(f"t{len(self.calls)}", [Word("w", offset_ms, offset_ms + 10)])


async def test_live_decodes_go_between_a_clips_windows_finals_first() -> None:
    host = ModelHost(STTConfig())
    host.transcriber = RecordingTranscriber(0.2)  # type: ignore[assignment]
    clip = np.zeros(int(70 * STT_SAMPLE_RATE), np.float32)  # three windows
    live = np.zeros(STT_SAMPLE_RATE, np.float32)
    whole = asyncio.create_task(host.transcribe_clip(clip))
    await asyncio.sleep(0.05)  # the clip's first window runs
    partial = asyncio.create_task(host.decode(live, final=False))
    await asyncio.sleep(0.01)
    final = asyncio.create_task(host.decode(live, final=True, offset_ms=5))
    transcript = await whole
    await asyncio.gather(partial, final)
    kinds = [
        call.split(":")[0] + (":live" if call.endswith(f":{len(live)}") else "")
        for call, _ in host.transcriber.calls
    ]  # type: ignore[attr-defined]
    assert kinds == ["word", "word:live", "partial:live", "word", "word"], kinds
    assert [w.start_ms for w in transcript.words] == [0, *[o for _, o in host.transcriber.calls[3:]]]  # type: ignore[attr-defined]


async def test_a_decode_cancelled_while_waiting_lets_the_others_go() -> None:
    host = ModelHost(STTConfig())
    host.transcriber = RecordingTranscriber(0.2)  # type: ignore[assignment]
    live = np.zeros(STT_SAMPLE_RATE, np.float32)
    running = asyncio.create_task(host.decode(live, final=True))
    await asyncio.sleep(0.05)
    waiting_final = asyncio.create_task(host.decode(live, final=True))
    waiting_partial = asyncio.create_task(host.decode(live, final=False))
    await asyncio.sleep(0.01)
    waiting_final.cancel()
    await running
    await asyncio.wait_for(waiting_partial, 2)  # not held by the final that left


def test_a_clips_windows_cover_it_under_whispers_window_cut_where_it_is_quiet() -> None:
    rng = np.random.default_rng(0)
    rate = STT_SAMPLE_RATE
    clip = rng.normal(0, 0.1, int(119 * rate)).astype(np.float32)
    quiet = [int(26.5 * rate), int(53.0 * rate), int(80.2 * rate), int(107.0 * rate)]
    for at in quiet:
        clip[at : at + int(0.3 * rate)] = 0.0  # a pause between words
    windows = clip_windows(clip)
    assert windows[0][0] == 0 and windows[-1][1] == len(clip)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    assert all(end - start <= CLIP_WINDOW_S * rate for start, end in windows)
    for (_, end), pause in zip(windows, quiet, strict=False):
        assert pause <= end <= pause + int(0.3 * rate), (end / rate, pause / rate)
    assert clip_windows(clip[: 10 * rate]) == [(0, 10 * rate)]
