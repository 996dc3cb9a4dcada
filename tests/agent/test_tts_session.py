"""One session to the endpoint: a chunk is audio unless the whole of it is a JSON object, and the
official client's shutdown race is dropped from the event loop's error log, and nothing else."""

import asyncio
import gc
import json
import logging
import time

import numpy as np
import pytest

from agent.endpoint_stream import Audio, Control, EndpointStreamError, _drop_crt_writer_race, classify
from agent.tts_session import TTSSession

RACE = "2080 (AWS_ERROR_HTTP_STREAM_HAS_COMPLETED): HTTP-stream has completed, action cannot be performed."


async def _set_request_body_generator():  # named as awscrt's request writer
    raise RuntimeError(RACE)


async def another_writer():
    raise RuntimeError(RACE)


class Pending:
    """awscrt's request writer, still writing when asyncio.run() shuts down: cancelled, it fails."""

    async def _set_request_body_generator(self):
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError(RACE) from None


async def abandon(coroutine) -> None:
    task = asyncio.get_running_loop().create_task(coroutine)
    await asyncio.wait([task])
    del task
    gc.collect()  # the unretrieved exception is reported when the task is collected


def test_only_awscrts_writer_race_is_dropped(caplog):
    async def main():
        loop = asyncio.get_running_loop()
        _drop_crt_writer_race(loop)
        handler = loop.get_exception_handler()
        _drop_crt_writer_race(loop)
        assert loop.get_exception_handler() is handler, "installing twice must not chain twice"
        await abandon(_set_request_body_generator())
        await abandon(another_writer())
        writer = loop.create_task(Pending()._set_request_body_generator())
        await asyncio.sleep(0)
        return writer  # still pending: asyncio.run() cancels it on the way out

    with caplog.at_level(logging.DEBUG):
        asyncio.run(main())
    errors = [r.getMessage() for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "never retrieved" in errors[0] and "another_writer" in errors[0], errors
    dropped = [r for r in caplog.records if r.name == "agent.endpoint_stream"]
    assert len(dropped) == 2 and all("aws-crt-python#762" in r.getMessage() for r in dropped)


@pytest.mark.parametrize("name", ["", "-kokoro", "kokoro_82m", "a" * 64, "kokoro 82m"])
async def test_an_endpoint_name_sagemaker_refuses_is_refused_at_once(name: str):
    """With an empty name the official client fails inside its background task and its call never
    returns: the session must refuse the name itself, with a typed error, before calling it."""
    from smithy_aws_core.identity import AWSCredentialsIdentity

    from agent.config import AgentConfig
    from agent.sagemaker_client import bidirectional_client

    config = AgentConfig(sagemaker_http2_endpoint="http://127.0.0.1:9")  # nothing listens: never reached
    client = await bidirectional_client(
        config, AWSCredentialsIdentity(access_key_id="a", secret_access_key="b")
    )
    started = time.perf_counter()
    with pytest.raises(EndpointStreamError) as error:
        await TTSSession.open(client, name, timeout_s=30)
    assert error.value.code == "ValidationError" and time.perf_counter() - started < 1


def test_a_json_object_chunk_is_control():
    chunk = json.dumps({"type": "synthesis_complete", "request_id": "s0", "duration_s": 1.2}).encode()
    assert classify(chunk) == Control({"type": "synthesis_complete", "request_id": "s0", "duration_s": 1.2})


def test_pcm_that_starts_with_an_open_brace_is_still_audio():
    samples = np.array([0x227B, -1200, 3000, 0x7B7B] * 1200, dtype="<i2")  # 0x7b '{' first byte
    chunk = samples.tobytes()
    assert chunk[:1] == b"{"
    assert classify(chunk) == Audio(chunk)


@pytest.mark.parametrize(
    "chunk", [b"{", b'{"type": "x"', b"{\xff\xfe}", b"[1, 2]", b'"text"', b"", b"\x00\x01"]
)
def test_anything_that_is_not_a_whole_json_object_is_audio(chunk):
    assert isinstance(classify(chunk), Audio)
