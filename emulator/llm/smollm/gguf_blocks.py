"""The GGUF's own quantized blocks as onnxruntime `MatMulNBits` weights: an int4 ONNX model whose
weights are the float model's, bit for bit, so it answers as the torch path does.

Why not the model builder's int4 or int8: SmolLM2's GGUF (`weights.py`) stores every linear layer as
Q4_1 (blocks of 32 along the input: w = d*q + m, q in 0..15, d and m float16) and the token embedding,
tied to the LM head, as Q8_0 (w = d*q, q in -127..127). transformers dequantizes them exactly; the
builder then quantizes those floats again onto its own grid, and each such build changed the answers.
On the 25 reference questions (tests/fixtures/everyday_prompts.txt and the agent's "capital of France")
against torch: int8 with float32 activations kept 6 answers and named London, int8 with int8
activations kept 2, int4 kept none and broke the answers' rules 6 times. A 135M model's greedy decoding
turns on differences that small. The builder's float32 build, rewritten here, keeps 25 of 25.

- **Q4_1 layers** become `MatMulNBits(bits=4)`: per block, m = its minimum, d = (max - min) / 15,
  q = round((w - m) / d), and d*q + m == w holds for every weight of SmolLM2 (checked; a weight where
  it does not stays a float MatMul). MatMulNBits takes integer zero points only (a float one selects
  a kernel 25x slower: 1,000 against 40 us for a 576x1536 layer), so zp = round(-m / d), and each
  block's remainder c = m + d*zp is added back as (x summed over each block) @ C: a [K/32, N] float
  matmul, 1/32 of the layer's weights.
- **The Q8_0 LM head** becomes two `MatMulNBits(bits=4)` and their sum: q + 128 = 16*hi + lo, so
  w = 16d*(hi - 8) + d*lo. onnxruntime's 8-bit kernel with float32 activations runs at a twentieth of
  the 4-bit one's speed (an int8 build: 4.6 tokens/s). The embedding lookup keeps a float32 table.

Every `MatMulNBits` here has accuracy level 1 (float32 activations): level 4 quantizes the activations
to int8, which changed 14 of 25 answers again. Speed, one thread on 2 VNNI cores: 70-82 tokens/s (the
builder's float32 build: 48, its int4: 105-120; `python -m benchmarks llm` and BENCHMARKS.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("emulator.llm.smollm")

BLOCK = 32  # Q4_1's and Q8_0's block length along the input, and the MatMulNBits block_size used here
LM_HEAD = "/lm_head/MatMul"
_MS_DOMAIN = "com.microsoft"


@dataclass(frozen=True)
class Nibbles:
    """One `MatMulNBits(bits=4)` weight for a [K, N] matrix: `packed` [N, K/32, 16] (two values a byte,
    the even one low), `scales` [N * K/32], `zero_points` [N * ceil(K/32 / 2)] (packed the same way)."""

    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray


def pack_nibbles(values: np.ndarray) -> np.ndarray:
    """Values 0..15 along the last axis, two to a byte (the even-indexed one in the low nibble)."""
    if values.shape[-1] % 2:
        values = np.concatenate([values, np.zeros((*values.shape[:-1], 1), values.dtype)], axis=-1)
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


def _blocks(weight: np.ndarray) -> np.ndarray | None:
    """A [K, N] matrix as [N, K/32, 32] float64 blocks along K, or None when K is not whole blocks."""
    k, n = weight.shape
    if k % BLOCK:
        return None
    return weight.T.reshape(n, k // BLOCK, BLOCK).astype(np.float64)


def _rebuilds(rebuilt: np.ndarray, blocks: np.ndarray, step: np.ndarray) -> bool:
    """Every weight given back to within a ten-thousandth of its block's step. The GGUF's d and m are
    float16, so transformers' float32 d*q + m is exact and this finds 0 on SmolLM2; the margin only
    forgives a dequantizer that rounds in another order, and is far below what moves an answer."""
    return bool(np.all(np.abs(rebuilt - blocks) <= 1e-4 * step[..., None]))


def q4_1_blocks(weight: np.ndarray) -> tuple[Nibbles, np.ndarray] | None:
    """A Q4_1 matrix [K, N] as MatMulNBits nibbles (integer zero points) and the per-block remainders
    C [K/32, N] that (x summed over each block) @ C adds back; None unless d*q + m gives every weight
    exactly."""
    blocks = _blocks(weight)
    if blocks is None:
        return None
    low, high = blocks.min(axis=-1), blocks.max(axis=-1)
    step = (high - low) / 15
    divisor = np.where(step == 0, 1.0, step)
    q = np.round((blocks - low[..., None]) / divisor[..., None])
    if not _rebuilds(step[..., None] * q + low[..., None], blocks, step):
        return None
    zero = np.clip(np.round(-low / divisor), 0, 15)
    remainder = low + step * zero
    nibbles = Nibbles(
        pack_nibbles(q.astype(np.uint8)),
        step.astype(np.float32).reshape(-1),
        pack_nibbles(zero.astype(np.uint8)).reshape(-1),
    )
    return nibbles, remainder.T.astype(np.float32)


def q8_0_halves(weight: np.ndarray) -> tuple[Nibbles, Nibbles] | None:
    """A Q8_0 matrix [K, N] as two MatMulNBits(bits=4) weights whose products sum to it (high nibbles at
    16 d with zero point 8, low nibbles at d with zero point 0); None unless d*q gives every weight
    exactly."""
    blocks = _blocks(weight)
    if blocks is None:
        return None
    step = np.abs(blocks).max(axis=-1) / 127
    divisor = np.where(step == 0, 1.0, step)
    q = np.round(blocks / divisor[..., None])
    if not _rebuilds(step[..., None] * q, blocks, step):
        return None
    biased = (q + 128).astype(np.uint8)
    n, count = step.shape
    zero_points = (count + 1) // 2
    scales = step.astype(np.float32).reshape(-1)
    high = Nibbles(pack_nibbles(biased >> 4), scales * 16, np.full(n * zero_points, 0x88, np.uint8))
    low = Nibbles(pack_nibbles(biased & 15), scales, np.zeros(n * zero_points, np.uint8))
    return high, low


class _Rewrite:
    """The rewritten graph's nodes and new initializers, built node by node."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.added: list[Any] = []
        self.dropped: set[str] = set()
        self.block_sums: dict[str, str] = {}
        self.tied: dict[str, np.ndarray] = {}  # the LM head's weight, by name, for the embedding

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.added.append(numpy_helper.from_array(value, name))
        return name

    def nbits(self, node_name: str, x: str, weight: str, nibbles: Nibbles, k: int, n: int, out: str) -> None:
        from onnx import helper

        inputs = [
            x,
            self.constant(f"{weight}.q4", nibbles.packed),
            self.constant(f"{weight}.scales", nibbles.scales),
            self.constant(f"{weight}.zero_points", nibbles.zero_points),
        ]
        self.nodes.append(
            helper.make_node(
                "MatMulNBits",
                inputs,
                [out],
                name=node_name,
                domain=_MS_DOMAIN,
                K=k,
                N=n,
                bits=4,
                block_size=BLOCK,
                accuracy_level=1,
            )
        )

    def summed_blocks(self, x: str, k: int) -> str:
        """x [.., K] summed over each block of 32: [.., K/32] (once per input)."""
        from onnx import helper

        if x not in self.block_sums:
            shape = self.constant(f"{x}/block_shape", np.array([0, 0, k // BLOCK, BLOCK], np.int64))
            axis = self.constant(f"{x}/block_axis", np.array([-1], np.int64))
            self.nodes.append(helper.make_node("Reshape", [x, shape], [f"{x}/blocks"], name=f"{x}/Blocks"))
            self.nodes.append(
                helper.make_node(
                    "ReduceSum", [f"{x}/blocks", axis], [f"{x}/block_sums"], name=f"{x}/BlockSums", keepdims=0
                )
            )
            self.block_sums[x] = f"{x}/block_sums"
        return self.block_sums[x]

    def q4_1(self, node: Any, weight: np.ndarray) -> bool:
        from onnx import helper

        found = q4_1_blocks(weight)
        if found is None:
            return False
        nibbles, remainders = found
        (x, name), out, (k, n) = node.input, node.output[0], weight.shape
        self.nbits(f"{node.name}NBits", x, name, nibbles, k, n, f"{out}/nbits")
        sums = self.summed_blocks(x, k)
        self.nodes.append(
            helper.make_node(
                "MatMul",
                [sums, self.constant(f"{name}.remainders", remainders)],
                [f"{out}/remainders"],
                name=f"{node.name}Remainders",
            )
        )
        self.nodes.append(
            helper.make_node("Add", [f"{out}/nbits", f"{out}/remainders"], [out], name=f"{node.name}Add")
        )
        self.dropped.add(name)
        return True

    def q8_0_lm_head(self, node: Any, weight: np.ndarray) -> bool:
        from onnx import helper

        halves = q8_0_halves(weight)
        if halves is None:
            return False
        (x, name), out, (k, n) = node.input, node.output[0], weight.shape
        for half, nibbles in zip(("high", "low"), halves, strict=True):
            self.nbits(f"{node.name}{half.title()}", x, f"{name}.{half}", nibbles, k, n, f"{out}/{half}")
        self.nodes.append(
            helper.make_node("Add", [f"{out}/high", f"{out}/low"], [out], name=f"{node.name}Add")
        )
        self.tied[name] = weight
        self.dropped.add(name)
        return True

    def untie_embedding(self) -> None:
        """The builder's embedding looks the tied LM head weight up through a Transpose: it now reads a
        float32 table [V, K] of its own (the head's weight is only in nibbles now)."""
        renamed: dict[str, str] = {}
        nodes = []
        for node in self.nodes:
            if node.op_type == "Transpose" and node.input[0] in self.tied:
                table = f"{node.input[0]}.embedding"
                if table not in renamed.values():
                    self.constant(table, np.ascontiguousarray(self.tied[node.input[0]].T))
                renamed[node.output[0]] = table
                continue
            nodes.append(node)
        for node in nodes:
            for index, name in enumerate(node.input):
                node.input[index] = renamed.get(name, name)
        self.nodes = nodes


def rewrite_model(source: Path, target: Path) -> dict[str, int]:
    """The float32 ONNX model in `source` (the builder's, `model.onnx` and its data) written to `target`
    with its GGUF blocks as MatMulNBits (the module docstring). Returns how many MatMuls became 4-bit
    and how many stayed float (weights that are not exact blocks)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source / "model.onnx"))
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    rewrite = _Rewrite()
    counts = {"int4": 0, "float": 0}
    for node in model.graph.node:
        weight_name = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight_name in initializers:
            weight = numpy_helper.to_array(initializers[weight_name])
            done = rewrite.q8_0_lm_head(node, weight) if node.name == LM_HEAD else rewrite.q4_1(node, weight)
            counts["int4" if done else "float"] += 1
            if done:
                continue
        rewrite.nodes.append(node)
    rewrite.untie_embedding()
    still_read = {name for node in rewrite.nodes for name in node.input}
    kept = [t for t in model.graph.initializer if t.name not in rewrite.dropped or t.name in still_read]
    del model.graph.node[:]
    model.graph.node.extend(rewrite.nodes)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept + rewrite.added)
    target.mkdir(parents=True, exist_ok=True)
    onnx.save(
        model,
        str(target / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=1024,
    )
    logger.info(
        "SmolLM2: %d MatMuls as the GGUF's 4-bit blocks, %d kept float", counts["int4"], counts["float"]
    )
    return counts
