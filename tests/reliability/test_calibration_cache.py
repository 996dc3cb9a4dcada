"""A calibration cache file that holds no usable figures (tts/scheduling/calibration.py): nested deeper
than Python's parser goes, or with the right signature and its figures as strings, NaN or negative. Before
the check, such a file kept the replica from ever becoming ready (503 `model is loading`: the
RecursionError or the first arithmetic on a string ended the load); now the replica times its engine
again, as it does when there is no file (about 6 s)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.speed_model import SpeedModelEngine
from tests.support.tts_container import tts_container
from tts.scheduling import calibration as calibrations

pytestmark = pytest.mark.reliability


def _poisons(signature: str) -> dict[str, str]:
    good = SpeedModelEngine(realtime=3.0, text_side_s=0.1).calibration()
    good.signature = signature
    record = good.to_json()
    as_strings = {**record, "text": {k: str(v) for k, v in record["text"].items()}}
    return {
        "nested": "[" * 100_000 + "]" * 100_000,
        "strings": json.dumps(as_strings),
        "nan": json.dumps({**record, "frames_per_token": float("nan")}),
        "negative": json.dumps({**record, "decode": {**record["decode"], "frame_s": -1.0}}),
        "boolean": json.dumps({**record, "tokens_per_char": True}),
        "not-an-object": "[1, 2, 3]",
        "missing": json.dumps({"signature": signature}),
    }


@pytest.mark.parametrize("kind", list(_poisons("x")))
def test_a_poisoned_cache_file_is_no_figure_and_no_failure(tmp_path: Path, kind: str) -> None:
    signature = "cpu|avx2|2t|onnx:cpu:conv|lanes1"
    path = calibrations.cache_path(tmp_path, signature)
    path.parent.mkdir(parents=True)
    path.write_text(_poisons(signature)[kind])
    assert calibrations.load_cached(tmp_path, signature) is None


@pytest.mark.integration
def test_a_replica_with_a_poisoned_cache_still_becomes_ready() -> None:
    with tts_container() as (server, _):
        signature = httpx.get(f"{server.http}/ping", timeout=10).json()["load"]["calibration"]["signature"]
    path = calibrations.cache_path(Path.home() / ".cache" / "voice-agent-aws", signature)
    kept = path.read_bytes() if path.is_file() else None
    try:
        path.write_text(_poisons(signature)["nested"])
        with tts_container() as (server, _):  # ready, or the context raises after its start limit
            assert httpx.get(f"{server.http}/ping", timeout=10).status_code == 200
    finally:
        if kept is not None:
            path.write_bytes(kept)
