"""A `POST /invocations` that waits for a slot gives up its place in line when its client hangs up
(container_kit.body.unless_disconnected): before, it kept its place, was computed once a slot freed,
for nobody, and held the next user back by as long."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from tests.support.tts_container import tts_container

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

LONG = "This answer is long enough to keep the only slot busy for a while. " * 12


def _load(http: str) -> dict:
    return httpx.get(f"{http}/ping", timeout=10).json()["load"]


async def _waiting_becomes(http: str, count: int, within_s: float) -> int:
    """The replica's count of waiting sessions, polled (it signals nothing) until it is `count`."""
    deadline = time.monotonic() + within_s
    while (waiting := _load(http)["waiting"]) != count and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    return waiting


async def test_a_waiting_request_whose_client_hangs_up_leaves_the_line() -> None:
    body = json.dumps({"text": LONG, "request_id": "first", "format": "pcm"})
    with tts_container({"TTS_CAPACITY": "1"}) as (server, _):
        client = httpx.AsyncClient(timeout=120)
        async with client, client.stream("POST", f"{server.http}/invocations", content=body) as first:
            assert first.status_code == 200
            second = asyncio.create_task(
                client.post(f"{server.http}/invocations", content=body.replace("first", "second"))
            )
            assert await _waiting_becomes(server.http, 1, 30) == 1, "the second request never waited"
            second.cancel()  # its client hangs up while it waits
            assert await _waiting_becomes(server.http, 0, 5) == 0, "the abandoned request kept its place"
            assert await anext(first.aiter_bytes())  # the first is served as before
