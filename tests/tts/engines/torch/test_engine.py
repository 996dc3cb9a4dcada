"""The torch engine on the CPU: the export to hexgrad's layout (strict, deterministic, loadable by plain
`kokoro.KModel`), and its equivalence with the ONNX engine it was rebuilt from.

Equivalence is judged by durations, a log-mel distance and Whisper's word error rate, not by waveform
correlation: the torch generator adds Gaussian noise to its harmonic source on every run (the ONNX
export has none), so two runs of the torch engine do not match sample by sample either.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest
import torch

from tests.support.renders import SENTENCES as ALL_SENTENCES
from tests.support.renders import VOICE, Renders, streamed
from tools.asr import transcribe, word_error_rate
from tools.fidelity import mel_distance, seam_click_ratio, seam_mel_distance
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines import create_engine, engine_name, export_model
from tts.engines.base import CancelFlag, SynthesisCancelled
from tts.engines.torch.engine import TorchEngine
from tts.engines.torch.export import EXPORT_SUBDIR, export_torch, hexgrad_layout
from tts.engines.torch.kmodel import (
    COMPONENTS,
    CONFIG_FILE,
    MODEL_FILE,
    REPO_ID,
    VOICES_DIR,
    KModelLoadError,
    build_kmodel,
    load_state_strictly,
)
from tts.engines.weights import AssetError, pypi_model
from tts.scheduling.plan import WindowPlan
from tts.wire.audio import float_to_pcm16

SENTENCES = ALL_SENTENCES[:2]


@pytest.fixture(scope="module")
def torch_engine(torch_model_dir) -> TorchEngine:
    return TorchEngine(TTSConfig(engine="torch", threads=2), torch_model_dir)


@pytest.fixture(scope="module")
def torch_renders(torch_engine) -> Renders:
    """One torch rendering of each sentence (whole and on the container's plan), shared by the tests."""
    return Renders(torch_engine, _plan(torch_engine))


def test_the_export_is_byte_identical_when_run_twice(torch_model_dir, tmp_path):
    again = export_torch(tmp_path / "again", TTSConfig.from_env().cache_dir)
    files = sorted(p.relative_to(torch_model_dir) for p in torch_model_dir.rglob("*") if p.is_file())
    assert {CONFIG_FILE, MODEL_FILE} <= {str(f) for f in files}
    assert len([f for f in files if f.parent.name == VOICES_DIR]) == 54, "every shipped voice"
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for name in files:
        assert (torch_model_dir / name).read_bytes() == (again / name).read_bytes(), name


def test_the_state_dict_is_complete_finite_and_rejected_when_it_does_not_fit(torch_model_dir):
    state = torch.load(torch_model_dir / MODEL_FILE, weights_only=True)
    assert set(state) == set(COMPONENTS)
    assert sum(len(s) for s in state.values()) == 688
    assert all(torch.isfinite(t).all() for s in state.values() for t in s.values())
    config = json.loads((torch_model_dir / CONFIG_FILE).read_text())
    model = build_kmodel(config)
    load_state_strictly(model, state)
    missing = {**state, "decoder": dict(list(state["decoder"].items())[1:])}
    unexpected = {**state, "bert_encoder": {**state["bert_encoder"], "extra.weight": torch.zeros(1)}}
    reshaped = {**state, "bert_encoder": {**state["bert_encoder"], "bias": torch.zeros(3)}}
    for broken in (missing, unexpected, reshaped, {k: v for k, v in state.items() if k != "bert"}):
        with pytest.raises(KModelLoadError):
            load_state_strictly(model, broken)


def test_the_export_loads_in_plain_kmodel_and_speaks_intelligibly(torch_model_dir):
    """No project code: hexgrad's KModel, the export's files, espeak-ng through phonemizer."""
    import espeakng_loader
    from kokoro import KModel
    from phonemizer.backend import EspeakBackend
    from phonemizer.backend.espeak.wrapper import EspeakWrapper

    model = KModel(
        repo_id=REPO_ID,
        config=str(torch_model_dir / CONFIG_FILE),
        model=str(torch_model_dir / MODEL_FILE),
    ).eval()
    state = torch.load(torch_model_dir / MODEL_FILE, weights_only=True)
    for component in COMPONENTS:
        loaded = getattr(model, component).state_dict()
        assert all(torch.equal(loaded[k], v) for k, v in state[component].items()), component
    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
    espeak = EspeakBackend("en-us", preserve_punctuation=True, with_stress=True)
    text = SENTENCES[1]
    phonemes = espeak.phonemize([text], strip=True)[0]
    pack = torch.load(torch_model_dir / VOICES_DIR / f"{VOICE}.pt", weights_only=True)
    audio = model(phonemes, pack[len(phonemes) - 1]).numpy()
    heard = transcribe(float_to_pcm16(audio))
    assert word_error_rate(text, heard) <= 0.1, heard


def test_torch_and_onnx_engines_agree(torch_renders, renders, record_property):
    """Durations: the duration predictor is the same (int8-derived) weights, but the ONNX graph also
    quantizes its activations (uint8, per call) before every MatMul and LSTM, so a token's summed
    sigmoid can round to the neighbouring frame: a few frames per sentence, measured 0-1, allowed
    max(2, 3 %). WER: the torch engine's may exceed the ONNX engine's by at most 0.05."""
    reference, heard, distances, loudness = " ".join(SENTENCES), {"onnx": [], "torch": []}, [], []
    for text in SENTENCES:
        assert torch_renders.tokens(text) == renders.tokens(text)
        onnx_audio, torch_audio = renders.whole(text), torch_renders.whole(text)
        frames = len(onnx_audio) / SAMPLES_PER_FRAME, len(torch_audio) / SAMPLES_PER_FRAME
        assert abs(frames[0] - frames[1]) <= max(2, 0.03 * frames[0]), frames
        distances.append(mel_distance(onnx_audio, torch_audio))
        loudness.append(float(np.sqrt((torch_audio**2).mean() / (onnx_audio**2).mean())))
        heard["onnx"].append(renders.heard_whole(text))
        heard["torch"].append(torch_renders.heard_whole(text))
    wer = {name: word_error_rate(reference, " ".join(parts)) for name, parts in heard.items()}
    record_property("log_mel_distance", distances)
    record_property("wer", wer)
    record_property("rms_torch_over_onnx", loudness)
    print(
        f"\nlog-mel distance per sentence {[round(d, 3) for d in distances]}; WER {wer}; "
        f"RMS torch/onnx {[round(r, 3) for r in loudness]}"
    )
    assert wer["torch"] <= wer["onnx"] + 0.05, heard
    # measured 0.46-0.47 (two torch renders of the same tokens differ by 0.02-0.03: the generator's noise)
    assert max(distances) < 0.9, distances
    assert all(0.55 < r < 0.8 for r in loudness), f"expected about 1/1.5 (the export's iSTFT), {loudness}"


def test_the_onnx_exports_istft_is_one_and_a_half_times_hexgrads():
    """The 3.5 dB loudness gap: the export's iSTFT (a traced torch-stft) multiplies by n_fft / hop = 4 and
    divides by the window's overlap sum only over the first 20 samples (traced as a constant), where
    torch.istft divides everywhere by that sum, 1.5 for a periodic Hann window of 20 at hop 5."""
    import onnx
    from kokoro.istftnet import TorchSTFT
    from onnx import numpy_helper

    graph = onnx.load(str(pypi_model(TTSConfig.from_env().cache_dir))).graph
    [basis] = [i for i in graph.initializer if i.name.endswith("stft.inverse_basis")]
    generator = torch.Generator().manual_seed(0)
    magnitude = torch.exp(torch.randn(1, 11, 2000, generator=generator) * 0.5 - 2)
    phase = torch.sin(torch.randn(1, 11, 2000, generator=generator) * 3)
    hexgrads = TorchSTFT(filter_length=20, hop_length=5, win_length=20).inverse(magnitude, phase).squeeze()
    spectrum = torch.cat([magnitude * torch.cos(phase), magnitude * torch.sin(phase)], dim=1)
    exported = (
        torch.nn.functional.conv_transpose1d(
            spectrum, torch.from_numpy(numpy_helper.to_array(basis)), stride=5
        ).squeeze()[10:-10]
        * 4.0
    )
    inner = slice(20, min(len(hexgrads), len(exported)) - 20)  # where both overlap-add fully
    ratio = exported[inner].pow(2).mean().sqrt() / hexgrads[inner].pow(2).mean().sqrt()
    assert torch.allclose(exported[inner], 1.5 * hexgrads[inner], atol=1e-5)
    assert abs(ratio.item() - 1.5) < 1e-3


def test_a_running_torch_forward_pass_can_be_cancelled(torch_engine):
    (tokens,) = torch_engine.segments(" ".join(SENTENCES * 2), "en-us")
    flag = CancelFlag()
    threading.Timer(0.3, lambda: setattr(flag, "terminate", True)).start()
    started = time.perf_counter()
    with pytest.raises(SynthesisCancelled):
        torch_engine.synthesize(tokens, VOICE, 1.0, flag)
    assert time.perf_counter() - started < 2.0
    assert len(torch_engine.synthesize(tokens[:20], VOICE, 1.0, CancelFlag())) > 0, "the engine still works"


def test_engine_choice_is_validated_and_auto_means_onnx_without_cuda(monkeypatch):
    with pytest.raises(ValueError, match="TTS_ENGINE must be onnx, torch or auto"):
        TTSConfig(engine="tensorrt")
    monkeypatch.setenv("TTS_ENGINE", "auto")
    config = TTSConfig.from_env()
    assert config.engine == "auto"
    assert engine_name(config) == ("torch" if torch.cuda.is_available() else "onnx")
    assert engine_name(TTSConfig(engine="torch")) == "torch"


def test_the_torch_engine_reuses_an_export_in_the_cache_and_refuses_another_layout(torch_model_dir, tmp_path):
    (tmp_path / EXPORT_SUBDIR).symlink_to(torch_model_dir, target_is_directory=True)
    assert hexgrad_layout(TTSConfig(cache_dir=tmp_path)) == tmp_path / EXPORT_SUBDIR
    engine = create_engine(TTSConfig(engine="torch", provider="cpu", threads=2, cache_dir=tmp_path))
    assert isinstance(engine, TorchEngine) and engine.model_dir == tmp_path / EXPORT_SUBDIR
    onnx_layout = tmp_path / "onnx-layout"
    export_model(onnx_layout, "onnx", TTSConfig.from_env().cache_dir)
    with pytest.raises(AssetError, match=r"not hexgrad's layout.*export-model"):
        hexgrad_layout(TTSConfig(model_dir=onnx_layout))
    with pytest.raises(ValueError, match="unknown model format"):
        export_model(tmp_path / "x", "gguf", tmp_path)


def _plan(torch_engine) -> WindowPlan:
    """The window plan the container gives the torch engine."""
    return WindowPlan.from_config(TTSConfig(), torch_engine.lanes)


def test_the_torch_engine_streams_window_by_window_without_clicks(torch_engine, torch_renders):
    feats, whole = torch_renders.features(SENTENCES[1]), torch_renders.whole(SENTENCES[1])
    audio, seams = torch_renders.streamed(SENTENCES[1])
    assert len(audio) == len(whole) == feats.frames * SAMPLES_PER_FRAME
    assert len(seams) >= 2, "the default plan must stream this sentence in several windows"
    # measured: 0.17-0.26 (two whole renders differ by 0.02-0.03: the generator's noise)
    assert mel_distance(whole, audio) < 0.35
    # a seam clicks when it jumps more than anything in the 100 ms around it (ratio above 1)
    assert seam_click_ratio(audio, seams) < 1.0, seam_click_ratio(audio, seams)
    no_context, _ = streamed(torch_engine, feats, dataclasses.replace(torch_renders.plan, context_frames=0))
    assert seam_mel_distance(whole, no_context, seams) > seam_mel_distance(whole, audio, seams), (
        "context must bring the audio at the seams closer to whole-segment audio"
    )


def test_the_torch_harmonic_source_keeps_its_phase_across_windows(torch_engine, torch_renders):
    """As for the ONNX engine (tests/tts/engines/test_decode.py): a window from the middle of the
    segment, with wide context, follows the whole-segment waveform only when the phase before it is
    carried in."""
    feats, whole = torch_renders.features(SENTENCES[1]), torch_renders.whole(SENTENCES[1])
    start = feats.frames // 2 - 40
    carried = torch_engine.decode(feats, start)
    restarted = torch_engine.decode(
        dataclasses.replace(feats, source_phase=np.zeros_like(feats.source_phase)), start
    )
    tail = slice(40 * SAMPLES_PER_FRAME, None)
    reference = whole[start * SAMPLES_PER_FRAME :][tail]

    def correlation(audio):
        return float(np.corrcoef(reference, audio[tail])[0, 1])

    assert correlation(carried) > correlation(restarted) + 0.05, (
        correlation(carried),
        correlation(restarted),
    )


@pytest.mark.asr
def test_torch_streaming_keeps_the_word_error_rate(torch_renders):
    heard_whole = [torch_renders.heard_whole(text) for text in SENTENCES]
    heard_streamed = [transcribe(float_to_pcm16(torch_renders.streamed(text)[0])) for text in SENTENCES]
    reference = " ".join(SENTENCES)
    wer_whole = word_error_rate(reference, " ".join(heard_whole))
    wer_streamed = word_error_rate(reference, " ".join(heard_streamed))
    assert wer_streamed <= wer_whole + 0.02, (wer_whole, wer_streamed, heard_streamed)
