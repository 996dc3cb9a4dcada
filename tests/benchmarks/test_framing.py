"""The framing analysis on hand-made traffic: events cut across chunks, and whole events per chunk."""

from __future__ import annotations

import base64
import itertools

from benchmarks.framing import analyze
from tts.wire.sse import encode_event


def _events(count: int) -> bytes:
    return b"".join(
        encode_event({"type": "audio_chunk", "seq": n, "data": base64.b64encode(bytes([n]) * 300).decode()})
        for n in range(count)
    )


def test_the_article_case_four_events_in_six_chunks_two_ending_mid_event() -> None:
    stream = _events(4)
    size = len(stream) // 4  # the four events have the same length
    # event 1 whole; event 2 in two chunks; event 3 whole; event 4 in two chunks
    cuts = [0, size, size + 100, 2 * size, 3 * size, 3 * size + 50, 4 * size]
    chunks = [stream[a:b] for a, b in itertools.pairwise(cuts)]
    framing = analyze(chunks)
    assert (framing.events, framing.chunks, framing.chunks_ending_mid_event) == (4, 6, 2)
    assert framing.naive_events == 2 and framing.naive_failures == 4
    assert framing.buffered_events == 4 and framing.buffered_failures == 0
    assert framing.audio_bytes_match


def test_whole_events_per_chunk_are_fine_for_both_consumers() -> None:
    stream = _events(3)
    size = len(stream) // 3
    framing = analyze([stream[i * size : (i + 1) * size] for i in range(3)])
    assert framing.chunks_ending_mid_event == 0
    assert framing.naive_failures == 0 and framing.buffered_failures == 0
