"""Windows of many sessions in one forward pass (`TorchEngine.decode_batch`, `masked.py`): each window
gets exactly its own audio, as decoded alone, within the stated tolerance; the masked decoder is
hexgrad's decoder; a cancelled session's window drops out of a batch without stopping the others."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.batching import PEAK_TOLERANCE, RMS_TOLERANCE
from benchmarks.gpu_bundle import log_spectral_distance
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines.base import CancelFlag, SynthesisCancelled, Window
from tts.engines.torch import masked
from tts.engines.torch.engine import TorchEngine
from tts.engines.torch.graphs import bucket_batch, bucket_frames, passes

TEXTS = [
    "Thanks for waiting, I found your order.",
    "It shipped yesterday from our Denver warehouse.",
    "Would you like me to do that now?",
    "Your flight is delayed by forty minutes.",
]
VOICES = ["jm_kumo", "jf_alpha", "jf_gongitsune", "jf_nezumi"]
SESSIONS = 16


@pytest.fixture(scope="module")
def torch_engine(torch_model_dir) -> TorchEngine:
    return TorchEngine(TTSConfig(engine="torch", threads=2, batch=SESSIONS), torch_model_dir)


@pytest.fixture(scope="module")
def segments(torch_engine) -> list:
    """A segment per (text, voice) pair: 16 sessions' worth."""
    return [
        torch_engine.features(torch_engine.segments(text, "en-us")[0], voice, 1.0)
        for text in TEXTS
        for voice in VOICES
    ]


def _windows(segments) -> list[Window]:
    """One window per session: lengths of a first window to a step, at a segment's start, middle, end."""
    windows = []
    for index, features in enumerate(segments):
        length = [12, 16, 20, 28][index % 4]
        start = [0, features.frames // 3, features.frames - length, 5][(index // 4) % 4]
        windows.append(Window(features, start, start + length))
    return windows


def test_sixteen_sessions_windows_batched_equal_each_alone(torch_engine, segments, record_property):
    windows = _windows(segments)
    assert len({id(w.features) for w in windows}) == SESSIONS
    assert len(torch_engine.batches([w.frames for w in windows])) < SESSIONS, "some windows must share a pass"
    batched = torch_engine.decode_batch(windows)
    peaks, rms = [], []
    for window, together in zip(windows, batched, strict=True):
        alone = torch_engine.decode(window.features, window.start, window.stop)
        assert together.shape == alone.shape == (window.frames * SAMPLES_PER_FRAME,)
        peaks.append(float(np.abs(together - alone).max()))
        rms.append(float(np.sqrt(np.mean((together - alone) ** 2))))
    record_property("max_abs", max(peaks))
    record_property("max_rms", max(rms))
    print(f"\nbatched vs alone, 16 sessions: max |diff| {max(peaks):.2e}, max RMS {max(rms):.2e}")
    assert max(peaks) <= PEAK_TOLERANCE and max(rms) <= RMS_TOLERANCE, (peaks, rms)
    # each window got its own audio: the next session's window of the same length is far from it
    assert np.abs(batched[0] - batched[4][: len(batched[0])]).max() > 100 * PEAK_TOLERANCE


def test_the_masked_decoder_is_hexgrads_decoder(torch_engine, segments, monkeypatch):
    """One window from a segment's start, alone: the masked decoder against kokoro's own
    `Decoder.forward`, both without the generator's random parts (its noise and initial phase). Not to
    the last bit: kokoro scales the source's cumulative phase by 2 pi before interpolating it, ours
    after adding the carried phase, and in float32 the 9th harmonic's phase reaches about 1e5 rad
    within a second, where one step is 0.008 rad; measured: RMS 1.1e-3, log-spectral distance 0.021
    (two renders with kokoro's noise differ by more)."""
    features = segments[0]
    stop = 30
    with torch.inference_mode():
        batch = torch_engine._batch([Window(features, 0, stop)])
        monkeypatch.setattr(masked, "source_noise", lambda first, n: torch.zeros(first.shape[0], n, 9))
        ours = masked.decode(torch_engine.model.decoder, batch)[0].numpy()
        monkeypatch.setattr(torch, "randn_like", torch.zeros_like)
        monkeypatch.setattr(torch, "rand", lambda *shape, **kw: torch.zeros(*shape, **kw))
        hexgrads = torch_engine.model.decoder(
            features.asr[:, :, :stop],
            features.f0[:, : 2 * stop],
            features.energy[:, : 2 * stop],
            features.style[:, :128],
        )
    hexgrads = hexgrads.squeeze().numpy()
    assert ours.shape == hexgrads.shape
    assert float(np.sqrt(np.mean((ours - hexgrads) ** 2))) < 3e-3
    assert log_spectral_distance(ours, hexgrads) < 0.05


def test_the_engine_is_deterministic_and_noise_follows_the_sample(torch_engine, segments):
    features = segments[1]
    assert np.array_equal(torch_engine.decode(features, 0, 20), torch_engine.decode(features, 0, 20))
    noise = masked.source_noise(torch.tensor([0, 600]), 1200)
    assert torch.equal(noise[0, 600:], noise[1, :600]), "the same sample position, the same noise"
    assert abs(float(noise.std()) - 1.0) < 0.02 and abs(float(noise.mean())) < 0.02


def test_a_cancelled_sessions_window_drops_out_of_the_batch(torch_engine, segments):
    flags = [CancelFlag(), CancelFlag(terminate=True), CancelFlag()]
    windows = [Window(segments[i], 0, 12, flags[i]) for i in range(3)]
    audio = torch_engine.decode_batch(windows)
    assert audio[1] is None and audio[0] is not None and audio[2] is not None
    for flag in flags:
        flag.terminate = True
    with pytest.raises(SynthesisCancelled):
        torch_engine.decode_batch(windows)


def test_passes_pad_a_window_into_a_pass_only_where_padding_costs_less():
    # on a CPU (a pass costs 8 frames): equal lengths share, a short window does not join a long pass
    assert passes([40, 40, 40], batch=8, pass_frames=8, bucketed=False) == [[0, 1, 2]]
    assert passes([12, 136], batch=8, pass_frames=8, bucketed=False) == [[1], [0]]
    # on a GPU (a pass costs 1024 frames, shapes bucketed): everything shares, up to the batch
    assert passes([12, 136, 40], batch=8, pass_frames=1024, bucketed=True) == [[1, 2, 0]]
    assert [len(p) for p in passes([20] * 70, batch=64, pass_frames=1024, bucketed=True)] == [64, 6]
    assert bucket_frames(136) == 144 and bucket_frames(16) == 16 and bucket_batch(5) == 8
