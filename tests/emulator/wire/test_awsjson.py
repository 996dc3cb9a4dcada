"""awsJson written once (emulator/wire/awsjson.py), in process: a body botocore gzipped is inflated within
its bound, an operation that awaits is awaited, and no answer carries a number JSON has no words for."""

from __future__ import annotations

import asyncio
import gzip
import json
import tracemalloc
from typing import Any

import pytest
from quart import Quart

from emulator.wire import bodies
from emulator.wire.awsjson import aws_json_blueprint


async def echo(body: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"got": body}


def app() -> Quart:
    served = Quart("awsjson-test")
    bodies.install(served)
    operations = {"Echo": echo, "Infinite": lambda body: {"Sum": float("inf")}}
    served.register_blueprint(aws_json_blueprint({"Test": operations}))
    return served


async def post(operation: str, data: bytes, **headers: str) -> tuple[int, dict[str, Any]]:
    response = (
        await app()
        .test_client()
        .post("/", data=data, headers={"X-Amz-Target": f"Test.{operation}", **headers})
    )
    return response.status_code, json.loads(await response.get_data())


async def test_a_gzipped_body_is_inflated_and_an_awaiting_operation_answers():
    body = {"MetricData": [{"MetricName": f"m{i}", "Value": i} for i in range(1_000)]}
    status, answer = await post(
        "Echo", gzip.compress(json.dumps(body).encode()), **{"Content-Encoding": "gzip"}
    )
    assert status == 200 and answer == {"got": body}


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [
        (gzip.compress(b"\0" * (bodies.INFLATED_LIMIT + 1)), 413, "RequestEntityTooLargeException"),
        (b"not gzip at all", 400, "SerializationException"),
        (gzip.compress(b'{"a": 1}')[:-12], 400, "SerializationException"),  # cut short
    ],
    ids=["a gzip bomb", "not gzip", "cut short"],
)
async def test_a_gzip_body_that_inflates_too_far_or_is_not_gzip_is_a_typed_error(
    data: bytes, status: int, code: str
):
    got, answer = await post("Echo", data, **{"Content-Encoding": "gzip"})
    assert (got, answer["__type"]) == (status, code)


def test_inflating_keeps_at_most_the_limit_in_memory():
    bomb = gzip.compress(b"\0" * 200_000_000)  # 200 MB in about 200 kB
    tracemalloc.start()
    try:
        with pytest.raises(bodies.AwsError) as caught:
            bodies.inflate(bomb, "gzip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.status == 413 and peak < 3 * bodies.INFLATED_LIMIT  # the buffer, then its copy
    assert bodies.inflate(b"plain", "identity") == b"plain"


async def test_an_answer_holding_an_infinity_is_a_typed_500_not_bare_infinity():
    status, answer = await post("Infinite", b"{}")
    assert status == 500 and answer["__type"] == "InternalServerException"
