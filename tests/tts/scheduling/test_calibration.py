"""The calibration (`tts/scheduling/calibration.py`): timed on the engine in front of it, kept per CPU
signature in the cache dir, and what follows from it moves with the speed it measured."""

import json

from tests.support.speed_model import SpeedModelEngine
from tts.scheduling import calibration as calibrations
from tts.scheduling.admission import capacity


def test_calibrate_measures_the_engine_it_is_given():
    """On the speed model at 12.5x real time (2 ms a frame, 30 ms a text side): the figures it times
    are the model's own."""
    engine = SpeedModelEngine(realtime=12.5, text_side_s=0.03, lanes=2)
    measured = calibrations.calibrate(engine, "jm_kumo", threads=2)
    assert abs(measured.decode.frame_s - 0.002) < 0.001, measured.summary()
    assert abs(measured.text.seconds(80) - 0.03) < 0.015, measured.summary()
    assert measured.frames_per_token == 1.0 and measured.tokens_per_char == 1.0
    assert "speed-model" in measured.signature and "2t" in measured.signature


def test_on_an_engine_that_batches_it_times_a_pass_over_several_windows(tmp_path):
    """The speed model batching 16 windows a pass at a tenth of a frame's cost alone: the calibration
    times its pass (`decode_batch_frame_ms`), keeps it, and the signature names the batch."""
    engine = SpeedModelEngine(realtime=12.5, text_side_s=0.03, call_s=0.01, batch=16, batch_frame_s=0.0002)
    measured = calibrations.calibrate(engine, "jm_kumo", threads=2)
    assert abs(measured.decode.batch_frame_s - 0.0002) < 0.0001, measured.summary()
    assert measured.summary()["decode_batch_frame_ms"] > 0 and "|batch16" in measured.signature
    calibrations.save(tmp_path, measured)
    assert calibrations.load_cached(tmp_path, measured.signature) == measured
    lone = calibrations.calibrate(SpeedModelEngine(realtime=12.5, text_side_s=0.03), "jm_kumo", threads=2)
    assert lone.decode.batch_frame_s == 0 and "decode_batch_frame_ms" not in lone.summary()
    assert "batch_frame_s" not in lone.to_json()["decode"], "an engine that does not batch: figures as before"


def test_it_is_kept_per_cpu_signature_and_read_back(tmp_path):
    engine = SpeedModelEngine(realtime=3.0, text_side_s=0.1)
    figures = engine.calibration()
    figures.signature = calibrations.cpu_signature(engine, 2)
    path = calibrations.save(tmp_path, figures)
    assert json.loads(path.read_text())["signature"] == figures.signature
    assert calibrations.load_cached(tmp_path, figures.signature) == figures
    other = calibrations.cpu_signature(engine, 4)
    assert other != figures.signature and calibrations.load_cached(tmp_path, other) is None
    path.write_text("{not json")
    assert calibrations.load_cached(tmp_path, figures.signature) is None, "a torn file is no figure"


def test_the_claimed_capacity_follows_the_measured_speed():
    claims = [
        capacity(engine.plan, engine.calibration())
        for engine in (SpeedModelEngine(x, 0.05, lanes=2) for x in (0.4, 1.5, 3.0, 8.0, 20.0))
    ]
    assert claims == sorted(claims) and claims[0] == 1 and claims[-1] > claims[2], claims
