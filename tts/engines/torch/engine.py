"""Kokoro-82M on torch: hexgrad's `kokoro.KModel` (float weights), on CUDA when present, else the CPU.

Weights: the engine is given a directory in hexgrad's layout (`config.json`, `kokoro-v1_0.pth`,
`voices/*.pt`) and loads every component strictly (`kmodel.py`). Which directory is not its business:
`export.py:hexgrad_layout` picks `TTS_MODEL_DIR` (or `/opt/ml/model`), or exports the layout once from the
shipped int8 ONNX into `<TTS_CACHE_DIR>/kokoro-torch`; the factory (`tts/engines/__init__.py`) hands it
over.

Two stages per segment, as in `KModel.forward_with_tokens`: the text side (ALBERT, the prosody
predictor's durations, the alignment, F0 and energy curves, the text encoder) gives features aligned to
output frames (`Features`, the type both engines share); the decoder turns them into audio, window by
window as the ONNX engine does (`tts/engines/decode.py`). The decoder runs hexgrad's modules through
`masked.py`: windows of any sessions in one forward pass (`decode_batch`), each padded to the pass's
length with its padding masked, its harmonic source started at the phase the frames before it left,
its noise a function of its samples' positions; so a window's audio does not depend on what it was
batched with, and the engine is deterministic. On CUDA each batch shape's pass is a CUDA graph
(`graphs.py`).

Cancel: `run_flag.terminate = True` from another thread stops a running forward pass at the next module
call (a pre-hook on every submodule checks the flag of the pass running in that thread; a batch's pass
stops once every window in it is cancelled), so a barge-in frees the engine within one layer's time
rather than after the whole segment. On CUDA the kernels already queued (a graph's, all of them) still
finish; nothing new is launched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from tts.config import SAMPLES_PER_FRAME, TTSConfig
from tts.engines.base import (
    WARMUP_TEXT,
    CancelFlag,
    Features,
    RunFlag,
    SpeechEngine,
    SynthesisCancelled,
    Window,
    choose_device,
    style_row,
)
from tts.engines.decode import HARMONICS, phase_before, source_phase
from tts.engines.torch import masked
from tts.engines.torch.graphs import FRAME_BUCKET, DecoderGraphs, bucket_batch, bucket_frames, passes
from tts.engines.torch.kmodel import CONFIG_FILE, load_kmodel, load_voices

log = logging.getLogger("tts.engines.torch")

# Windows one forward pass takes: on a GPU, 64 windows of the plan's longest step (136 frames with
# context) are 8,700 frames, 218 s of audio, in a few GB of activations; on a CPU a pass is bound by
# arithmetic, not by launching, so batching gains little there and a long pass only delays the windows
# after it.
GPU_BATCH = 64
CPU_BATCH = 8
# What one more forward pass costs, in frames of padding: `batches` pads a window into a pass rather than
# give it a pass of its own while the padding costs less. On a GPU a pass of a few windows takes about as
# long as one of many (launch-bound); on a CPU, a pass costs a few frames' arithmetic (the calibration's
# call_s over frame_s: 4-12 on 2 cores).
GPU_PASS_FRAMES = 1024
CPU_PASS_FRAMES = 8
# The longest window whose graphs `warm_up` captures: the plan's longest step (120 frames) with its
# context on either side (8 each) is 136, bucketed to 144; 160 leaves room for a longer context.
GRAPH_FRAMES = 160


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
        stft = self.model.decoder.generator.stft
        stft.window = stft.window.to(self._device)  # a plain attribute, which `.to(device)` leaves behind
        self.voices = load_voices(directory)
        super().__init__(self.model.vocab, config.g2p)
        self.model_dir = directory
        self._running = threading.local()
        on_gpu = self._device == "cuda"
        self.batch = config.batch or (GPU_BATCH if on_gpu else CPU_BATCH)
        self.pass_frames = GPU_PASS_FRAMES if on_gpu else CPU_PASS_FRAMES
        self._graphs = (
            DecoderGraphs(self.model.decoder, torch.device(self._device))
            if on_gpu and config.cuda_graphs == "on"
            else None
        )
        self._graph_lock = threading.Lock()  # one replay at a time: the graphs share their memory
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

    def warm_up(self, voice: str) -> float:
        """The base warm-up, then on CUDA every common batch shape's graph (`graphs.py`): batches of
        1 to `batch` windows (powers of two) of up to GRAPH_FRAMES frames, captured now rather than in
        the first session that needs one."""
        seconds = super().warm_up(voice)
        if self._graphs is None:
            return seconds
        started = time.perf_counter()
        features = self.features(self.segments(WARMUP_TEXT, "en-us")[0], voice, 1.0)
        example = self._batch([Window(features, 0, min(features.frames, FRAME_BUCKET))])
        sizes = [1 << k for k in range(self.batch.bit_length()) if 1 << k <= self.batch]
        with self._graph_lock:
            self._graphs.capture(sizes, list(range(FRAME_BUCKET, GRAPH_FRAMES + 1, FRAME_BUCKET)), example)
        log.info(
            "captured %d CUDA graphs in %.1fs%s",
            len(self._graphs.shapes),
            time.perf_counter() - started,
            f" ({self._graphs.disabled})" if self._graphs.disabled else "",
        )
        return seconds + time.perf_counter() - started

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
        (audio,) = self.decode_batch([Window(features, start, stop, run_flag)])
        if audio is None:
            raise SynthesisCancelled()
        return audio

    def decode_windows(
        self, features: Features[torch.Tensor], ranges: list[tuple[int, int]], run_flag: RunFlag | None = None
    ) -> list[np.ndarray]:
        """A step's windows of one segment, in one forward pass."""
        audio = self.decode_batch([Window(features, start, stop, run_flag) for start, stop in ranges])
        if any(piece is None for piece in audio):
            raise SynthesisCancelled()
        return audio  # type: ignore[return-value]

    def decode_batch(self, windows: Sequence[Window[torch.Tensor]]) -> list[np.ndarray | None]:
        """The windows of any sessions in forward passes of up to `batch` windows each (`batches`:
        longest first, a shorter window joining a pass where padding it costs less than a pass of its
        own), each window's padding masked, so each gets the audio it would get alone (`masked.py`).
        A pass stops at its next module once every window in it is cancelled."""
        live = [index for index, window in enumerate(windows) if not window.cancelled]
        if not live:
            raise SynthesisCancelled()
        results: list[np.ndarray | None] = [None] * len(windows)
        for group in self.batches([windows[index].frames for index in live]):
            chosen = [windows[live[i]] for i in group]
            try:
                audio = self._forward(chosen)
            except SynthesisCancelled:
                continue
            for i, piece in zip(group, audio, strict=True):
                window = windows[live[i]]
                results[live[i]] = None if window.cancelled else piece
        if all(result is None for result in results):
            raise SynthesisCancelled()
        return results

    def batches(self, frames: list[int]) -> list[list[int]]:
        """Indices into `frames` (windows' lengths), grouped into forward passes (`graphs.passes`)."""
        return passes(frames, self.batch, self.pass_frames, bucketed=self._graphs is not None)

    def _padded_length(self, frames: int) -> int:
        return bucket_frames(frames) if self._graphs is not None else frames

    def _padded_size(self, size: int) -> int:
        return bucket_batch(size) if self._graphs is not None else size

    @torch.inference_mode()
    def _forward(self, windows: list[Window[torch.Tensor]]) -> list[np.ndarray]:
        """One forward pass over `windows`: their audio, each cut to its own frames."""
        batch = self._batch(windows)
        self._running.flag = _AllCancelled([window.run_flag for window in windows])
        try:
            if self._graphs is None:
                audio = masked.decode(self.model.decoder, batch)
            else:
                with self._graph_lock:
                    audio = self._graphs.run(batch)
                    if audio is None:
                        audio = masked.decode(self.model.decoder, batch)
        finally:
            self._running.flag = None
        audio = audio.float().cpu().numpy()
        return [audio[i, : window.frames * SAMPLES_PER_FRAME] for i, window in enumerate(windows)]

    def _batch(self, windows: list[Window[torch.Tensor]]) -> masked.Batch:
        """The windows' features, zero-padded to one length (and, with graphs, to bucket shapes)."""
        length = self._padded_length(max(window.frames for window in windows))
        size = self._padded_size(len(windows))
        device = self._device
        asr = torch.zeros((size, 512, length), device=device)
        f0 = torch.zeros((size, 2 * length), device=device)
        energy = torch.zeros((size, 2 * length), device=device)
        style = torch.zeros((size, 128), device=device)
        frames = [window.frames for window in windows] + [1] * (size - len(windows))
        phase = np.zeros((size, HARMONICS), np.float32)
        for i, window in enumerate(windows):
            features, start, stop = window.features, window.start, window.stop
            asr[i, :, : stop - start] = features.asr[0, :, start:stop]
            f0[i, : 2 * (stop - start)] = features.f0[0, 2 * start : 2 * stop]
            energy[i, : 2 * (stop - start)] = features.energy[0, 2 * start : 2 * stop]
            style[i] = features.style[0, :128]
            phase[i] = phase_before(features.source_phase, start)
        first = [window.start * SAMPLES_PER_FRAME for window in windows] + [0] * (size - len(windows))
        return masked.Batch(
            asr,
            f0,
            energy,
            style,
            torch.tensor(frames, dtype=torch.long).to(device),
            torch.from_numpy(phase).to(device),
            torch.tensor(first, dtype=torch.long).to(device),
            padded=self._graphs is not None or len(set(frames)) > 1 or frames[0] != length,
        )


class _AllCancelled:
    """A batch's run flag: set once every window's is (one session's barge-in leaves the rest)."""

    def __init__(self, flags: list[RunFlag | None]) -> None:
        self._flags = flags

    @property
    def terminate(self) -> bool:
        return all(flag is not None and flag.terminate for flag in self._flags)
