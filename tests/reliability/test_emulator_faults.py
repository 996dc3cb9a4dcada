"""Faults under a live session: the container killed (SIGKILL) or frozen (SIGSTOP) mid-session.

Either way the client gets a typed error, not a hang; the controller replaces the replica; and the
next session works. A frozen container is found by its failing health checks (`unhealthy_probes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator

import pytest
from aws_sdk_sagemaker_runtime_http2.models import ModelError, ModelStreamError, ServiceUnavailableError

from emulator.server import Emulator
from tests.emulator.support import (
    next_part,
    part,
    replicas,
    status,
)
from tests.reliability.emulator_support import echo_emulator, open_echoing, say

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    home = tmp_path_factory.mktemp("emulator")
    with echo_emulator(home, probe_timeout_s=0.5, unhealthy_probes=3, ws_connect_timeout_s=2.0) as running:
        yield running


async def _ready_again(emu: Emulator, old_pid: int, within_s: float = 30.0) -> dict:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        [replica] = replicas(emu, "echo")
        if replica["ready"] and replica["pid"] not in {None, old_pid}:
            return replica
        await asyncio.sleep(0.1)
    raise AssertionError(f"no new ready replica within {within_s:g} s: {replicas(emu, 'echo')}")


async def _next_session_works(emu: Emulator) -> None:
    stream, _ = await open_echoing(emu)
    await stream.close()


async def test_killed_container_is_a_typed_error_then_replaced(emu: Emulator) -> None:
    stream, events = await open_echoing(emu)
    [replica] = replicas(emu, "echo")
    killed_at = time.monotonic()
    os.killpg(replica["pid"], signal.SIGKILL)
    with pytest.raises(ModelStreamError) as caught:
        await next_part(events, within_s=10)
    surfaced_ms = (time.monotonic() - killed_at) * 1000
    assert caught.value.error_code == "1006"
    new = await _ready_again(emu, replica["pid"])
    back_s = time.monotonic() - killed_at
    await _next_session_works(emu)
    say(
        "SIGKILL the container mid-session",
        f"ModelStreamError 1006 after {surfaced_ms:.0f} ms, replica back in {back_s:.1f} s "
        f"(restarts {new['restarts']}), next session works",
    )
    assert new["restarts"] >= replica["restarts"] + 1
    with contextlib.suppress(Exception):
        await stream.close()


async def test_frozen_container_is_replaced_and_its_session_ends_with_an_error(emu: Emulator) -> None:
    stream, events = await open_echoing(emu)
    [replica] = replicas(emu, "echo")
    frozen_at = time.monotonic()
    os.killpg(replica["pid"], signal.SIGSTOP)
    try:
        await stream.input_stream.send(part(b"into the void", "UTF8"))
        with pytest.raises(ModelStreamError) as caught:
            await next_part(events, within_s=30)
        ended_s = time.monotonic() - frozen_at
        # A session opened while it is frozen gets an error too, not a hang.
        opened = time.monotonic()
        with contextlib.suppress(ModelError, ServiceUnavailableError, ModelStreamError):
            late, _ = await open_echoing(emu)
            await late.close()
        open_s = time.monotonic() - opened
        new = await _ready_again(emu, replica["pid"])
        back_s = time.monotonic() - frozen_at
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(replica["pid"], signal.SIGCONT)
    reasons = [e["reason"] for e in status(emu)["events"] if e["object"] == replica["id"]]
    await _next_session_works(emu)
    say(
        "SIGSTOP the container mid-session",
        f"ModelStreamError {caught.value.error_code!r} ({caught.value.message}) after {ended_s:.1f} s, "
        f"a new session answered in {open_s:.1f} s, replica replaced in {back_s:.1f} s, "
        f"events {reasons[-4:]}",
    )
    assert caught.value.error_code == "1006"
    assert "Unhealthy" in reasons and "Replacing" in reasons
    assert new["restarts"] >= replica["restarts"] + 1
    assert open_s < 15
