"""The torch engine on an NVIDIA GPU (`pytest -m gpu`, `tox -e gpu`, `scripts/gpu-check`): parameters and
activations on CUDA, the forward pass's kernels on the GPU (profiler), and GPU audio matching CPU audio."""

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tools.fidelity import mel_distance
from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines.base import style_row
from tts.engines.torch.engine import TorchEngine

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: an NVIDIA GPU is needed"),
]

TEXT = "It shipped yesterday from our Denver warehouse and should arrive on Thursday."
VOICE = "jm_kumo"


@pytest.fixture(scope="module")
def gpu_engine(torch_model_dir) -> TorchEngine:
    return TorchEngine(TTSConfig(engine="torch", provider="cuda"), torch_model_dir)


@pytest.fixture(scope="module")
def tokens(gpu_engine) -> list[int]:
    (tokens,) = gpu_engine.segments(TEXT, "en-us")
    return tokens


def test_parameters_and_activations_live_on_cuda(gpu_engine, tokens):
    assert gpu_engine.device.startswith("cuda")
    assert all(p.is_cuda for p in gpu_engine.model.parameters())
    outputs: list[torch.Tensor] = []
    # the masked decoder (masked.py) calls each residual block's layers, not the block itself
    hooks = [
        m.convs1[0].register_forward_hook(lambda _m, _a, out: outputs.append(out))
        for m in gpu_engine.model.decoder.generator.resblocks
    ]
    try:
        style = torch.from_numpy(style_row(gpu_engine.voices[VOICE], len(tokens))).cuda()
        features = gpu_engine.text_side(tokens, style, 1.0)
        assert all(t.is_cuda for t in (features.asr, features.f0, features.energy, features.style))
        gpu_engine.decode(features)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(outputs) == len(gpu_engine.model.decoder.generator.resblocks)
    assert all(out.is_cuda for out in outputs)


def test_the_forward_pass_runs_its_kernels_on_the_gpu(gpu_engine, tokens):
    gpu_engine.synthesize(tokens, VOICE, 1.0)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        gpu_engine.synthesize(tokens, VOICE, 1.0)
        torch.cuda.synchronize()
    events = prof.key_averages()
    device_us = sum(e.self_device_time_total for e in events)
    convolutions_on_cpu = [e.key for e in events if "mkldnn_convolution" in e.key]
    assert device_us > 0, "no time on the GPU"
    assert not convolutions_on_cpu, f"convolutions ran on the CPU: {convolutions_on_cpu}"
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    audio = gpu_engine.synthesize(tokens, VOICE, 1.0)
    end.record()
    torch.cuda.synchronize()
    print(f"\nGPU forward {start.elapsed_time(end):.1f} ms for {len(audio) / 24000:.2f} s of audio")


def test_gpu_audio_matches_cpu_audio(gpu_engine, torch_model_dir, tokens):
    cpu_engine = TorchEngine(TTSConfig(engine="torch", provider="cpu"), torch_model_dir)
    on_gpu = gpu_engine.synthesize(tokens, VOICE, 1.0)
    on_cpu = cpu_engine.synthesize(tokens, VOICE, 1.0)
    assert abs(len(on_gpu) - len(on_cpu)) <= 2 * SAMPLES_PER_FRAME, "durations differ by more than two frames"
    distance = mel_distance(on_gpu, on_cpu)
    print(f"\nGPU vs CPU log-mel distance {distance:.3f}")
    # two CPU renders differ by 0.02-0.03 (the generator's noise); the ONNX and torch engines by 0.47
    assert distance < 0.3, distance
    assert np.isfinite(on_gpu).all() and np.abs(on_gpu).max() > 0.05


def test_batched_windows_on_cuda_replay_graphs_and_equal_each_alone(gpu_engine, tokens):
    """Windows of different lengths and offsets in one pass on the GPU (a CUDA graph of its bucket
    shape) against each alone. TF32 convolutions round differently per shape, so the bound is the
    log-spectral distance of two clips, not the CPU's sample tolerance; the JSON of the GPU check
    (`DIR/run`) records the sample figures."""
    from benchmarks.gpu_bundle import log_spectral_distance
    from tts.engines.base import Window

    features = gpu_engine.features(tokens, VOICE, 1.0)
    windows = [Window(features, start, start + length) for start, length in ((0, 20), (10, 40), (30, 64))]
    batched = gpu_engine.decode_batch(windows)
    assert gpu_engine._graphs is not None and gpu_engine._graphs.disabled is None, gpu_engine._graphs.disabled
    assert gpu_engine._graphs.shapes, "the batch ran as a CUDA graph"
    for window, together in zip(windows, batched, strict=True):
        alone = gpu_engine.decode(features, window.start, window.stop)
        peak = float(np.abs(together - alone).max())
        print(f"\n{window.start}-{window.stop}: max |batched - alone| {peak:.2e}")
        assert log_spectral_distance(together, alone) < 0.05
