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
