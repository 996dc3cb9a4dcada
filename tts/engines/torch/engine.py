"""Kokoro-82M on torch: hexgrad's `kokoro.KModel` (float weights), on CUDA when present, else the CPU.

Weights: the engine is given a directory in hexgrad's layout (`config.json`, `kokoro-v1_0.pth`,
`voices/*.pt`) and loads every component strictly (`kmodel.py`). Which directory is not its business:
`export.py:hexgrad_layout` picks `TTS_MODEL_DIR` (or `/opt/ml/model`), or exports the layout once from the
shipped int8 ONNX into `<TTS_CACHE_DIR>/kokoro-torch`; the factory (`tts/engines/__init__.py`) hands it
over.

Two stages per segment, as in `KModel.forward_with_tokens`: the text side (ALBERT, the prosody
predictor's durations, the alignment, F0 and energy curves, the text encoder) gives features aligned to
output frames (`Features`, the type both engines share); the decoder turns them into audio, window by
window as the ONNX engine does (`tts/engines/decode.py`). For that, the harmonic source's sine
generator (kokoro's `SineGen._f02sine`) is replaced by the same computation started from a given phase:
the phase accumulated over the frames before the window. (kokoro adds a random initial phase to the
overtones before downsampling the per-sample phase steps to the F0 rate, where it never survives, so
whole-segment audio is unchanged.)
The generator's other randomness, Gaussian noise per sample, is white, so windows need no care for it.

Cancel: `run_flag.terminate = True` from another thread stops a running forward pass at the next module
call (a pre-hook on every submodule checks the flag of the pass running in that thread), so a barge-in
frees the engine within one layer's time rather than after the whole segment. On CUDA the kernels already
queued still finish; nothing new is launched.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tts.config import TTSConfig
from tts.engines.base import (
    CancelFlag,
    Features,
    RunFlag,
    SpeechEngine,
    SynthesisCancelled,
    choose_device,
    style_row,
)
from tts.engines.decode import phase_before, source_phase
from tts.engines.torch.kmodel import CONFIG_FILE, load_kmodel, load_voices

log = logging.getLogger("tts.engines.torch")


class TorchEngine(SpeechEngine[torch.Tensor]):
    name = "torch"

    def __init__(self, config: TTSConfig, directory: Path) -> None:
        """Load hexgrad's layout from `directory`; `config` gives the threads, the device
        (`TTS_PROVIDER`)."""
        started = time.perf_counter()
        if config.threads:
            torch.set_num_threads(config.threads)
        self._device = choose_device(
            config.provider, cuda_present=torch.cuda.is_available(), missing="torch sees no CUDA device"
        )
        self.model = load_kmodel(directory, self._device)
        self._fuse_weight_norm()
        self.voices = load_voices(directory)
        super().__init__(self.model.vocab, config.g2p)
        self.model_dir = directory
        self._running = threading.local()
        sine_gen = self.model.decoder.generator.m_source.l_sin_gen
        sine_gen._f02sine = _phase_carrying_f02sine(sine_gen, self._running)
        for module in self.model.modules():
            if module is not self.model:
                module.register_forward_pre_hook(self._check_cancel)
        self.load_seconds = time.perf_counter() - started
        log.info(
            "loaded %s/%s in %.2fs (torch %s on %s, %d voices)",
            directory,
            CONFIG_FILE,
            self.load_seconds,
            torch.__version__,
            self.device,
            len(self.voices),
        )

    @property
    def device(self) -> str:
        device = next(self.model.parameters()).device
        return str(device) if device.type == "cpu" else f"{device.type}:{device.index or 0}"

    def run_flag(self) -> CancelFlag:
        return CancelFlag()

    def _fuse_weight_norm(self) -> None:
        """Inference only: fold weight norm into plain weights once, instead of on every forward pass."""
        for module in self.model.modules():
            if hasattr(module, "weight_g"):
                torch.nn.utils.remove_weight_norm(module)

    def _check_cancel(self, module: torch.nn.Module, args: object) -> None:
        flag = getattr(self._running, "flag", None)
        if flag is not None and flag.terminate:
            raise SynthesisCancelled()

    @torch.inference_mode()
    def text_side(self, tokens: list[int], style: torch.Tensor, speed: float) -> Features[torch.Tensor]:
        """Tokens -> durations -> frame-aligned text features, F0 and energy (hexgrad's forward, part 1)."""
        model = self.model
        input_ids = torch.tensor([[0, *tokens, 0]], dtype=torch.long, device=style.device)
        lengths = torch.full((1,), input_ids.shape[-1], dtype=torch.long, device=style.device)
        text_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        bert_dur = model.bert(input_ids, attention_mask=(~text_mask).int())
        d_en = model.bert_encoder(bert_dur).transpose(-1, -2)
        prosody = style[:, 128:]
        d = model.predictor.text_encoder(d_en, prosody, lengths, text_mask)
        x, _ = model.predictor.lstm(d)
        duration = torch.sigmoid(model.predictor.duration_proj(x)).sum(axis=-1) / speed
        durations = torch.round(duration).clamp(min=1).long().squeeze(0)
        indices = torch.repeat_interleave(torch.arange(input_ids.shape[1], device=style.device), durations)
        alignment = torch.zeros((input_ids.shape[1], indices.shape[0]), device=style.device)
        alignment[indices, torch.arange(indices.shape[0], device=style.device)] = 1
        alignment = alignment.unsqueeze(0)
        f0, energy = model.predictor.F0Ntrain(d.transpose(-1, -2) @ alignment, prosody)
        asr = model.text_encoder(input_ids, lengths, text_mask) @ alignment
        return Features(
            asr=asr,
            f0=f0,
            energy=energy,
            style=style,
            source_phase=source_phase(f0.float().cpu().numpy()),
            durations=durations.cpu().numpy(),
        )

    def features(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> Features[torch.Tensor]:
        """The text side for one segment."""
        style = torch.from_numpy(style_row(self.voice_pack(voice), len(tokens))).to(self._device)
        self._running.flag = run_flag
        try:
            return self.text_side(tokens, style, speed)
        finally:
            self._running.flag = None

    @torch.inference_mode()
    def decode(
        self,
        features: Features[torch.Tensor],
        start: int = 0,
        stop: int | None = None,
        run_flag: RunFlag | None = None,
    ) -> np.ndarray:
        """Audio of frames [start, stop) (default: all), decoded from those frames alone, the harmonic
        source's phase carried over from the frames before `start` (hexgrad's forward, part 2)."""
        stop = features.frames if stop is None else stop
        self._running.flag = run_flag
        self._running.phase = torch.from_numpy(phase_before(features.source_phase, start)).to(self._device)
        try:
            audio = self.model.decoder(
                features.asr[:, :, start:stop],
                features.f0[:, 2 * start : 2 * stop],
                features.energy[:, 2 * start : 2 * stop],
                features.style[:, :128],  # the decoder's half of the style row
            )
        finally:
            self._running.flag = self._running.phase = None
        return audio.squeeze().float().cpu().numpy()


def _phase_carrying_f02sine(sine_gen: torch.nn.Module, running: threading.local):
    """kokoro's `SineGen._f02sine` (its non-pulse branch), with `running.phase` ([9], turns / 300) added
    to the cumulative phase: where the frames before this window left the source."""

    def f02sine(f0_values: torch.Tensor) -> torch.Tensor:
        scale = sine_gen.upsample_scale
        steps = (f0_values / sine_gen.sampling_rate) % 1
        steps = F.interpolate(steps.transpose(1, 2), scale_factor=1 / scale, mode="linear").transpose(1, 2)
        phase = torch.cumsum(steps, dim=1)
        start = getattr(running, "phase", None)
        if start is not None:
            phase = phase + start
        phase = F.interpolate(phase.transpose(1, 2) * scale * 2 * torch.pi, scale_factor=scale, mode="linear")
        return torch.sin(phase.transpose(1, 2))

    return f02sine
