"""Kokoro-82M inference through onnxruntime (the int8 export): one segment of phoneme tokens -> float32
audio. Phonemization, segment splitting, the style-row rule and the feature type are shared with the
torch engine (`tts/engines/base.py`).

Graph: `tokens` int64 [1, n+2] (wrapped in pad 0), `style` float32 [1, 256], `speed` float32 [1];
output `audio` float32 at 24 kHz. It runs as two sessions (see `graph_split.py`): the text side
(`features`: aligned features, F0 and energy per frame) and the decoder (`decode`: any window of those
frames, 600 samples each), so a segment's audio can be streamed window by window (`window_decoder`). On a
CPU the decoder is loaded once more per lane, on one thread each, so that the windows of a step run
side by side (`decode_windows`, `TTS_WINDOW_LANES`). Where onnxruntime's u8s8 GEMM is exact (VNNI), the
decoder's int8 convolutions run as int8 matrix products with signed weights (`conv_matmul.py`,
`TTS_INT8_CONV`): the same audio, bit for bit, in about two thirds of the time.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort

from tts.config import TTSConfig
from tts.engines.base import (
    Features,
    RunFlag,
    SpeechEngine,
    SynthesisCancelled,
    Window,
    choose_device,
    style_row,
)
from tts.engines.cpu_quota import quota_cores
from tts.engines.decode import HARMONICS, phase_before, source_phase
from tts.engines.onnx.assets import load_assets
from tts.engines.onnx.conv_matmul import u8s8_gemm_is_exact
from tts.engines.onnx.graph_split import ASR, F0, PHASE, STYLE, N, split_model

log = logging.getLogger("tts.engines.onnx")


def _providers(provider: str) -> list[str]:
    """onnxruntime's execution providers for `TTS_PROVIDER` (`choose_device`)."""
    cuda_present = "CUDAExecutionProvider" in ort.get_available_providers()
    missing = "onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)"
    if choose_device(provider, cuda_present=cuda_present, missing=missing) == "cpu":
        return ["CPUExecutionProvider"]
    # onnxruntime-gpu[cuda,cudnn] ships CUDA and cuDNN as pip wheels; load them before the session.
    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def _session(path: Path, threads: int, providers: list[str], spin: bool) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # With `spin`, inside a run the intra-op threads spin between operators: the text side and a short
    # window are thousands of small operators, and waking a sleeping thread for each costs more than the
    # operator (measured: text side of 20 words 204 -> 159 ms, first window 278 -> 234 ms). At the end of
    # a run they stop: an idle spinning pool burnt ~50 ms of CPU per run, taken from the lanes, the event
    # loop and the other processes of a local stack. Whether to spin: `_spins`.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return ort.InferenceSession(str(path), sess_options=options, providers=providers)


def _spins(choice: str, quota: float | None) -> bool:
    """Spin (`_session`) when asked, or, by default, where no CPU quota applies (`quota` in cores): under
    a quota a spinning thread's wait is CPU time taken from the quota, and the work waits for the next
    period. Measured on 2 AVX2-only cores at a 1.3-core quota (scripts/cpu-quota, scripts/avx2-only):
    a 20-word sentence's first audio 625-1,596 ms spinning, 391-495 ms not; on 2 VNNI cores without a
    quota 100-125 ms spinning, 121-169 ms not."""
    return choice == "on" or (choice == "auto" and quota is None)


def _on_cpu(providers: list[str]) -> bool:
    return providers == ["CPUExecutionProvider"]


def _auto_lanes(threads: int, providers: list[str]) -> int:
    """Two one-thread lanes on a CPU with two threads or more (measured on 2 cores, tts/README.md); one
    lane on a GPU, where a window is already one wide kernel launch after another."""
    return 2 if threads >= 2 and _on_cpu(providers) else 1


def _int8_conv(choice: str, providers: list[str]) -> str:
    """`matmul` where the u8s8 GEMM is exact on a CPU (auto) or where asked and exact; else `conv`."""
    if choice == "conv" or (choice == "auto" and not _on_cpu(providers)):
        return "conv"
    if u8s8_gemm_is_exact(providers):
        return "matmul"
    if choice == "matmul":
        raise RuntimeError(
            "TTS_INT8_CONV=matmul but onnxruntime's u8s8 GEMM saturates on this CPU (no VNNI); "
            "use auto or conv"
        )
    return "conv"


class OnnxEngine(SpeechEngine[np.ndarray]):
    name = "onnx"

    def __init__(self, config: TTSConfig) -> None:
        started = time.perf_counter()
        assets = load_assets(config.model_dir, config.cache_dir)
        super().__init__(assets.vocab, config.g2p)
        threads = config.threads or os.cpu_count() or 1
        split = split_model(assets.model_path, config.cache_dir)
        providers = _providers(config.provider)
        self.int8_conv = _int8_conv(config.int8_conv, providers)
        decoder_path = split.matmul_decoder_path if self.int8_conv == "matmul" else split.decoder_path
        self.spins = _spins(config.spin, quota_cores())
        self._text = _session(split.text_path, threads, providers, self.spins)
        self._decoder = _session(decoder_path, threads, providers, self.spins)
        lanes = config.window_lanes or _auto_lanes(threads, providers)
        # With one lane every window runs on the decoder above, on all threads.
        self._lanes = (
            [_session(decoder_path, 1, providers, self.spins) for _ in range(lanes)] if lanes > 1 else []
        )
        self._lane_pool = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="kokoro-lane")
        self.lanes = lanes
        self.model_path = assets.model_path
        self.voices = assets.voices
        self.load_seconds = time.perf_counter() - started
        log.info(
            "loaded %s in %.2fs (%s, int8 convolutions as %s, threads %s, %d voices)",
            assets.model_path.name,
            self.load_seconds,
            self.provider,
            self.int8_conv,
            "spinning" if self.spins else "sleeping between operators",
            len(self.voices),
        )

    @property
    def provider(self) -> str:
        return self._decoder.get_providers()[0]

    @property
    def device(self) -> str:
        return self.provider

    def run_flag(self) -> ort.RunOptions:
        return ort.RunOptions()

    def features(
        self, tokens: list[int], voice: str, speed: float, run_flag: RunFlag | None = None
    ) -> Features[np.ndarray]:
        """The text side for one segment (a few percent of the work)."""
        style = style_row(self.voice_pack(voice), len(tokens))
        feeds = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            STYLE: style,
            "speed": np.array([speed], dtype=np.float32),
        }
        asr, f0, energy, durations = self._run(self._text, feeds, run_flag)
        return Features(asr, f0, energy, style, source_phase(f0), durations.reshape(-1).astype(np.int64))

    def decode(
        self,
        features: Features[np.ndarray],
        start: int = 0,
        stop: int | None = None,
        run_flag: RunFlag | None = None,
    ) -> np.ndarray:
        return self._decode_on(self._decoder, features, start, stop, run_flag)

    def decode_windows(
        self, features: Features[np.ndarray], ranges: list[tuple[int, int]], run_flag: RunFlag | None = None
    ) -> list[np.ndarray]:
        """Several windows side by side, one per one-thread lane; a single window on every thread."""
        if len(ranges) == 1 or len(ranges) > len(self._lanes):
            return super().decode_windows(features, ranges, run_flag)
        runs = [
            self._lane_pool.submit(self._decode_on, lane, features, start, stop, run_flag)
            for lane, (start, stop) in zip(self._lanes, ranges, strict=False)
        ]
        return [run.result() for run in runs]

    def decode_batch(self, windows: Sequence[Window[np.ndarray]]) -> list[np.ndarray | None]:
        """The windows of any sessions, as many at a time as there are lanes, side by side (onnxruntime
        runs one window per call: the int8 graph has no batch axis that padding could share)."""
        if len(windows) < 2 or not self._lanes:
            return super().decode_batch(windows)
        runs = [
            self._lane_pool.submit(self._decode_alone, self._lanes[index % len(self._lanes)], window)
            for index, window in enumerate(windows)
        ]
        results = [run.result() for run in runs]
        if all(result is None for result in results):
            raise SynthesisCancelled()
        return results

    def _decode_alone(self, session: ort.InferenceSession, window: Window[np.ndarray]) -> np.ndarray | None:
        """One window of `decode_batch` on one lane: None once its job is cancelled."""
        if window.cancelled:
            return None
        try:
            return self._decode_on(session, window.features, window.start, window.stop, window.run_flag)
        except SynthesisCancelled:
            return None

    def _decode_on(
        self,
        session: ort.InferenceSession,
        features: Features[np.ndarray],
        start: int,
        stop: int | None,
        run_flag: RunFlag | None,
    ) -> np.ndarray:
        stop = features.frames if stop is None else stop
        feeds = {
            ASR: features.asr[:, :, start:stop],
            F0: features.f0[:, 2 * start : 2 * stop],
            N: features.energy[:, 2 * start : 2 * stop],
            STYLE: features.style,
            PHASE: phase_before(features.source_phase, start).reshape(1, 1, HARMONICS),
        }
        (audio,) = self._run(session, feeds, run_flag)
        return audio.reshape(-1)

    @staticmethod
    def _run(session: ort.InferenceSession, feeds: dict, run_flag: RunFlag | None) -> list:
        try:
            return session.run(None, feeds, run_flag)
        except Exception as exc:  # onnxruntime raises a generic Fail when terminated
            if run_flag is not None and run_flag.terminate:
                raise SynthesisCancelled() from exc
            raise
