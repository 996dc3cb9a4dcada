"""One `words` entry per written token through the real container (issue 33 item 5): an unspaced
Japanese sentence long enough for two segments was reported twice, each entry carrying the whole token."""

from __future__ import annotations

import httpx
import pytest

from tts.wire.sse import SSEParser

pytestmark = pytest.mark.integration

JAPANESE = "今日は良い天気です。" * 5  # one written token, over 510 phoneme tokens


async def test_sse_reports_a_token_heard_over_two_segments_once(tts_server):
    body = {"text": f"Today: {JAPANESE} Done.", "transport": "sse", "timestamps": True}
    async with httpx.AsyncClient(timeout=120) as client:
        response = await client.post(f"{tts_server.http}/invocations", json=body)
    assert response.status_code == 200
    events = SSEParser().feed(response.content)
    frames = [event for event in events if event["type"] == "words"]
    assert len(frames) >= 2, "the text is long enough for two segments"
    assert [word["text"] for frame in frames for word in frame["words"]] == ["Today:", JAPANESE, "Done."]
