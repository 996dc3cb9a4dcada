"""Split the Kokoro ONNX export into its text side and its decoder, so the decoder can run over windows
of frames (see `tts/engines/decode.py`).

The export is one graph `tokens, style, speed -> audio`. Inside it, hexgrad's `KModel.forward_with_tokens`
hands the decoder four tensors, whose names keep the torch module paths:
- `asr` [1, 512, frames]: text-encoder features aligned to the predicted durations;
- `F0` and `N` [1, 2 * frames]: the predicted pitch and energy curves;
- `style` [1, 256] (the decoder reads its first 128 values).
`onnx.utils.Extractor` cuts the graph there into `tokens, style, speed -> asr, F0, N, durations` (the
text side, about 5% of the work; `durations` [1, tokens]: the duration predictor's frames per token, at
the asked speed, from which `asr` was aligned) and `asr, F0, N, style -> audio` (the decoder: 600
samples per frame at 24 kHz).
Both keep the export's int8 weights unchanged; run back to back they give the whole graph's output
bit for bit.

The decoder gets one extra input, `phase` [1, 1, 9]: the harmonic source (SineGen, fundamental plus 8
overtones) integrates F0 with a cumulative sum that starts at zero at the first frame it is given. Adding
the phase accumulated over the frames before a window keeps the source continuous across windows. The
export has no random initial phase and no noise generator, so the decoder is deterministic.

A third graph is the decoder with its int8 convolutions re-expressed as int8 matrix products with
signed weights (`conv_matmul.py`): the same audio, faster on CPUs with VNNI.

The split is deterministic and built once per source model and per rewriting code, into the cache
directory next to the assembled model: the key is the source's SHA-256 and `rewrite_fingerprint`, the
SHA-256 of this module's and `conv_matmul.py`'s source, so a change to either rebuilds the graphs
instead of running the old ones. A manifest records the hashes and is checked on load.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from tts.engines.decode import HARMONICS
from tts.engines.onnx import conv_matmul

ASR = "/encoder/MatMul_1_output_0"
F0 = "/encoder/Reshape_output_0"
N = "/encoder/Reshape_1_output_0"
DURATIONS = "/encoder/Cast_output_0"  # round(durations / speed) clipped to >= 1, as int64
STYLE = "style"
PHASE = "phase"
_CUMSUM = "/decoder/decoder/generator/m_source/l_sin_gen/CumSum_output_0"
# The code that writes the graphs: its bytes are part of the cache key. (`HARMONICS`, the phase input's
# width, comes from decode.py but is the model's: the fundamental and 8 overtones.)
REWRITE_SOURCES = (Path(__file__), Path(conv_matmul.__file__))


class GraphSplitError(RuntimeError):
    """The model is not a Kokoro export this splitter understands, or its cached split is corrupt."""


@dataclass(frozen=True)
class SplitModel:
    text_path: Path
    decoder_path: Path
    matmul_decoder_path: Path

    @property
    def paths(self) -> tuple[Path, Path, Path]:
        return self.text_path, self.decoder_path, self.matmul_decoder_path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def rewrite_fingerprint() -> str:
    """SHA-256 over the source of the modules that write the graphs (`REWRITE_SOURCES`), in order."""
    digest = hashlib.sha256()
    for path in REWRITE_SOURCES:
        digest.update(_sha256(path).encode())
    return digest.hexdigest()


def _add_phase_input(decoder) -> None:
    """Insert `cumsum + phase` after the harmonic source's cumulative sum, as a new graph input."""
    from onnx import TensorProto, helper

    graph = decoder.graph
    shifted = f"{_CUMSUM}_shifted"
    position = None
    for index, node in enumerate(graph.node):
        if _CUMSUM in node.output:
            position = index
        for slot, name in enumerate(node.input):
            if name == _CUMSUM:
                node.input[slot] = shifted
    if position is None:
        raise GraphSplitError(f"the decoder has no harmonic-source cumulative sum ({_CUMSUM})")
    graph.node.insert(
        position + 1, helper.make_node("Add", [_CUMSUM, PHASE], [shifted], name="/stream/phase_offset")
    )
    graph.input.append(helper.make_tensor_value_info(PHASE, TensorProto.FLOAT, [1, 1, HARMONICS]))


def _build(source: Path, split: SplitModel) -> None:
    import copy

    import onnx
    import onnx.utils

    model = onnx.load(str(source))
    names = {out for node in model.graph.node for out in node.output}
    missing = [name for name in (ASR, F0, N, DURATIONS) if name not in names]
    if missing:
        raise GraphSplitError(
            f"{source.name} lacks the tensors {missing} it is cut at; not a Kokoro v1.0 export"
        )
    extractor = onnx.utils.Extractor(model)
    text = extractor.extract_model(["tokens", STYLE, "speed"], [ASR, F0, N, DURATIONS])
    decoder = extractor.extract_model([ASR, F0, N, STYLE], ["audio"])
    _add_phase_input(decoder)
    matmul_decoder = copy.deepcopy(decoder)
    conv_matmul.convolutions_as_matmul(matmul_decoder)
    for part in (decoder, matmul_decoder):
        onnx.checker.check_model(part)
    for part, path in zip((text, decoder, matmul_decoder), split.paths, strict=True):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        onnx.save(part, str(tmp))
        tmp.replace(path)


def split_model(source: Path, cache_dir: Path) -> SplitModel:
    """The text-side and decoder graphs of `source`, built on first use and verified afterwards."""
    source_sha, code_sha = _sha256(source), rewrite_fingerprint()
    directory = cache_dir / "split" / f"{source_sha[:16]}-{code_sha[:16]}"
    split = SplitModel(directory / "text.onnx", directory / "decoder.onnx", directory / "decoder-matmul.onnx")
    manifest_path = directory / "manifest.json"
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if (manifest.get("source_sha256"), manifest.get("code_sha256")) == (source_sha, code_sha) and all(
            path.is_file() and _sha256(path) == manifest.get(path.name) for path in split.paths
        ):
            return split
    directory.mkdir(parents=True, exist_ok=True)
    _build(source, split)
    manifest = {"source": source.name, "source_sha256": source_sha, "code_sha256": code_sha}
    manifest.update({path.name: _sha256(path) for path in split.paths})
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return split
