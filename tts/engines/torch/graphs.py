"""CUDA graphs of the masked decoder (`masked.py`), one per batch shape: a window's forward pass is about
a thousand small kernels, each launched from Python in eager mode (on the order of 10 us of CPU time
apiece), so a short window or a small batch on a GPU is bound by launching, not by the GPU; a graph
replays all of them in one launch.

Shapes are bucketed so that few graphs cover every batch: windows are padded to a multiple of
FRAME_BUCKET frames and the batch to a power of two (the padding is masked: `masked.py`). A shape's
graph is captured on its first use (a warm-up run on a side stream, then the capture: a few hundred
milliseconds, so `capture` takes the common shapes at load), at most MAX_GRAPHS of them; past that, or
where capture fails (the reason is kept in `disabled` and logged), the batch runs eagerly. All graphs
share one memory pool: they are replayed one at a time, under the engine's lock, and each output is
copied out before the next replay.
"""

from __future__ import annotations

import logging
from dataclasses import fields

import torch

from tts.engines.torch import masked

log = logging.getLogger("tts.engines.torch")

FRAME_BUCKET = 16
# 7 batch sizes (1-64) x 10 lengths (16-160 frames: the window plan's longest step, 120 frames, with
# 8 frames of context on either side is 136) is 70; a few more for longer windows.
MAX_GRAPHS = 96


def bucket_frames(frames: int) -> int:
    return -(-frames // FRAME_BUCKET) * FRAME_BUCKET


def bucket_batch(size: int) -> int:
    return 1 << (size - 1).bit_length()


def passes(frames: list[int], batch: int, pass_frames: int, bucketed: bool) -> list[list[int]]:
    """Indices into `frames` (windows' lengths) grouped into forward passes of at most `batch` windows:
    longest first; a window joins the current pass (padded to its longest; with `bucketed`, to bucket
    shapes) while that pass costs no more than the two passes apart would, a pass costing
    `pass_frames` plus the frames it computes, padding included."""

    def size(n: int) -> int:
        return bucket_batch(n) if bucketed else n

    groups: list[list[int]] = []
    for index in sorted(range(len(frames)), key=lambda i: -frames[i]):
        if groups and len(groups[-1]) < batch:
            group = groups[-1]
            longest = bucket_frames(frames[group[0]]) if bucketed else frames[group[0]]
            joined = size(len(group) + 1) * longest
            apart = size(len(group)) * longest + pass_frames + frames[index]
            if joined <= apart:
                group.append(index)
                continue
        groups.append([index])
    return groups


class DecoderGraphs:
    def __init__(self, decoder: torch.nn.Module, device: torch.device) -> None:
        self._decoder = decoder
        self._device = device
        self._graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, masked.Batch, torch.Tensor]] = {}
        self._pool = torch.cuda.graph_pool_handle()
        self.disabled: str | None = None

    @property
    def shapes(self) -> list[tuple[int, int]]:
        return sorted(self._graphs)

    def run(self, batch: masked.Batch) -> torch.Tensor | None:
        """The decoder's output for `batch` (already padded to bucket shapes) by its shape's graph,
        captured now if new; None where no graph can serve it (run it eagerly)."""
        shape = (batch.asr.shape[0], batch.asr.shape[-1])
        graph = self._graphs.get(shape)
        if graph is None:
            if self.disabled is not None or len(self._graphs) >= MAX_GRAPHS:
                return None
            graph = self._capture(batch)
            if graph is None:
                return None
        cuda_graph, static, output = graph
        for field in fields(masked.Batch):
            if field.name != "padded":
                getattr(static, field.name).copy_(getattr(batch, field.name))
        cuda_graph.replay()
        return output.clone()

    def capture(self, batch_sizes: list[int], frames: list[int], example: masked.Batch) -> None:
        """Capture the graphs of every (batch size, frames) pair now (at load), from `example`'s first
        window repeated: the values do not matter, the shapes do."""
        for size in batch_sizes:
            for length in frames:
                if self.disabled is not None or (size, length) in self._graphs:
                    continue
                self._capture(_resized(example, size, length))

    def _capture(self, batch: masked.Batch):
        shape = (batch.asr.shape[0], batch.asr.shape[-1])
        static = masked.Batch(
            *(getattr(batch, f.name).clone() for f in fields(masked.Batch) if f.name != "padded")
        )
        try:
            side = torch.cuda.Stream(self._device)
            side.wait_stream(torch.cuda.current_stream(self._device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    masked.decode(self._decoder, static)
            torch.cuda.current_stream(self._device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                output = masked.decode(self._decoder, static)
        except RuntimeError as exc:  # a kernel that cannot be captured: run eagerly from now on
            self.disabled = f"capturing {shape} failed: {exc}"
            log.warning("CUDA graphs off: %s", self.disabled)
            return None
        self._graphs[shape] = (graph, static, output)
        return self._graphs[shape]


def _resized(batch: masked.Batch, size: int, length: int) -> masked.Batch:
    """`batch`'s first window, cut or zero-padded to `length` frames, repeated `size` times."""

    def fit(tensor: torch.Tensor, per_frame: int) -> torch.Tensor:
        row = tensor[:1, ..., : length * per_frame]
        row = torch.nn.functional.pad(row, (0, length * per_frame - row.shape[-1]))
        return row.expand(size, *row.shape[1:]).contiguous()

    frames = batch.frames[:1].clamp(max=length).expand(size).contiguous()
    return masked.Batch(
        fit(batch.asr, 1),
        fit(batch.f0, 2),
        fit(batch.energy, 2),
        batch.style[:1].expand(size, -1).contiguous(),
        frames,
        batch.phase[:1].expand(size, -1).contiguous(),
        batch.first_sample[:1].expand(size).contiguous(),
    )
