"""The GGUF's blocks recovered from the dequantized floats and written as MatMulNBits: exact where the
weights are blocks, left alone where they are not, and the same products on onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from emulator.llm.smollm.gguf_blocks import BLOCK, LM_HEAD, Nibbles, q4_1_blocks, q8_0_halves, rewrite_model

RNG = np.random.default_rng(7)


def q4_1_matrix(k: int, n: int) -> np.ndarray:
    """A [K, N] matrix as Q4_1 dequantizes: per block of 32 along K, d*q + m with q in 0..15 (both ends
    used, as llama.cpp's quantizer makes them) and d, m float16, as the GGUF stores them."""
    q = RNG.integers(0, 16, (n, k // BLOCK, BLOCK)).astype(np.float32)
    q[..., 0], q[..., 1] = 0, 15
    step = RNG.uniform(0.001, 0.02, (n, k // BLOCK, 1)).astype(np.float16).astype(np.float32)
    low = RNG.uniform(-0.2, 0.05, (n, k // BLOCK, 1)).astype(np.float16).astype(np.float32)
    return (step * q + low).reshape(n, k).T.copy()


def q8_0_matrix(k: int, n: int) -> np.ndarray:
    q = RNG.integers(-127, 128, (n, k // BLOCK, BLOCK)).astype(np.float32)
    q[..., 0] = 127
    step = RNG.uniform(0.0005, 0.01, (n, k // BLOCK, 1)).astype(np.float16).astype(np.float32)
    return (step * q).reshape(n, k).T.copy()


def unpack(nibbles: Nibbles, k: int, n: int) -> np.ndarray:
    """[K, N] from MatMulNBits' layout: scale * (q - zero point) per block."""
    packed = nibbles.packed.reshape(n, k // BLOCK, BLOCK // 2)
    q = np.stack([packed & 15, packed >> 4], axis=-1).reshape(n, k // BLOCK, BLOCK).astype(np.float64)
    zeros = np.stack([nibbles.zero_points.reshape(n, -1) & 15, nibbles.zero_points.reshape(n, -1) >> 4], -1)
    zeros = zeros.reshape(n, -1)[:, : k // BLOCK, None].astype(np.float64)
    scales = nibbles.scales.reshape(n, k // BLOCK, 1).astype(np.float64)
    return (scales * (q - zeros)).reshape(n, k).T


def test_q4_1_blocks_give_back_every_weight_exactly() -> None:
    weight = q4_1_matrix(96, 40)  # 3 blocks along K: an odd count, so the zero points pad a nibble
    nibbles, remainders = q4_1_blocks(weight)
    assert remainders.shape == (3, 40)
    rebuilt = unpack(nibbles, 96, 40) + np.repeat(remainders.astype(np.float64), BLOCK, axis=0)
    np.testing.assert_allclose(rebuilt, weight, rtol=0, atol=1e-9)


def test_weights_that_are_not_blocks_are_refused() -> None:
    assert q4_1_blocks(RNG.standard_normal((64, 8)).astype(np.float32)) is None
    assert q8_0_halves(RNG.standard_normal((64, 8)).astype(np.float32)) is None
    assert q4_1_blocks(q4_1_matrix(64, 8)[:48]) is None  # K not whole blocks


def test_q8_0_halves_sum_to_every_weight() -> None:
    weight = q8_0_matrix(64, 24)
    high, low = q8_0_halves(weight)
    np.testing.assert_allclose(unpack(high, 64, 24) + unpack(low, 64, 24), weight, rtol=0, atol=1e-9)


def tied_model(path: Path, layer: np.ndarray, head: np.ndarray, other: np.ndarray) -> None:
    """ids -> embedding (the head's weight transposed, as the builder ties them) -> a Q4_1 layer -> a
    float layer -> the LM head; the embedding is an output too."""
    nodes = [
        helper.make_node(
            "Transpose", ["head.weight"], ["table"], name="/model/embed_tokens/Transpose", perm=[1, 0]
        ),
        helper.make_node("Gather", ["table", "ids"], ["embedded"], name="/model/embed_tokens/Gather"),
        helper.make_node("MatMul", ["embedded", "layer.weight"], ["hidden"], name="/model/layers.0/MatMul"),
        helper.make_node("MatMul", ["hidden", "other.weight"], ["mixed"], name="/model/layers.1/MatMul"),
        helper.make_node("MatMul", ["mixed", "head.weight"], ["logits"], name=LM_HEAD),
    ]
    graph = helper.make_graph(
        nodes,
        "tied",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "seq"])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("logits", "embedded")],
        [
            numpy_helper.from_array(w, n)
            for w, n in ((layer, "layer.weight"), (head, "head.weight"), (other, "other.weight"))
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    path.mkdir()
    onnx.save(model, str(path / "model.onnx"), save_as_external_data=True, location="model.onnx.data")


def run(path: Path, ids: np.ndarray) -> list[np.ndarray]:
    return ort.InferenceSession(str(path / "model.onnx")).run(["logits", "embedded"], {"ids": ids})


def test_the_rewritten_model_computes_what_the_float_model_does(tmp_path: Path) -> None:
    vocab, hidden = 50, 64
    head = q8_0_matrix(hidden, vocab)
    layer, other = q4_1_matrix(hidden, 96), RNG.standard_normal((96, hidden)).astype(np.float32) * 0.1
    tied_model(tmp_path / "float", layer, head, other)
    counts = rewrite_model(tmp_path / "float", tmp_path / "blocks")
    assert counts == {"int4": 2, "float": 1}  # the layer and the head; the float layer stays a MatMul

    rewritten = onnx.load(str(tmp_path / "blocks" / "model.onnx"), load_external_data=False)
    ops = [node.op_type for node in rewritten.graph.node]
    assert ops.count("MatMulNBits") == 3 and "Transpose" not in ops
    assert all(
        {a.name: helper.get_attribute_value(a) for a in node.attribute}["accuracy_level"] == 1
        for node in rewritten.graph.node
        if node.op_type == "MatMulNBits"
    ), "float32 activations: level 4 would quantize them and change the answers"
    assert "head.weight" not in {tensor.name for tensor in rewritten.graph.initializer}

    ids = np.array([[3, 17, 49, 0, 3]], np.int64)
    (logits, embedded), (want_logits, want_embedded) = (
        run(tmp_path / "blocks", ids),
        run(tmp_path / "float", ids),
    )
    np.testing.assert_array_equal(embedded, want_embedded)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-4, atol=1e-5)
    assert logits.shape == (1, 5, vocab)


@pytest.mark.parametrize("k", [64, 96])
def test_a_prompt_chunk_and_a_single_token_give_the_same_rows(tmp_path: Path, k: int) -> None:
    """The block sums reshape [batch, seq, K]: a whole prompt at once and one token at a time agree."""
    tied_model(tmp_path / "float", q4_1_matrix(k, k), q8_0_matrix(k, 30), np.eye(k, dtype=np.float32))
    rewrite_model(tmp_path / "float", tmp_path / "blocks")
    ids = np.array([[1, 2, 3, 4]], np.int64)
    whole = run(tmp_path / "blocks", ids)[0]
    one_by_one = np.concatenate([run(tmp_path / "blocks", ids[:, i : i + 1])[0] for i in range(4)], axis=1)
    np.testing.assert_allclose(whole, one_by_one, rtol=1e-5, atol=1e-6)


def test_an_untied_head_gets_no_embedding_table(tmp_path: Path) -> None:
    """Only a head whose weight the embedding reads (through the builder's Transpose) brings a float
    table along; an untied one is nibbles only."""
    head = q8_0_matrix(64, 40)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "head.weight"], ["logits"], name=LM_HEAD)],
        "untied",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(head, "head.weight")],
    )
    (tmp_path / "float").mkdir()
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
        str(tmp_path / "float" / "model.onnx"),
    )
    assert rewrite_model(tmp_path / "float", tmp_path / "blocks") == {"int4": 1, "float": 0}
    names = {
        t.name
        for t in onnx.load(
            str(tmp_path / "blocks" / "model.onnx"), load_external_data=False
        ).graph.initializer
    }
    assert not any(name.endswith(".embedding") for name in names) and "head.weight" not in names
    x = RNG.standard_normal((1, 1, 64)).astype(np.float32)
    got = ort.InferenceSession(str(tmp_path / "blocks" / "model.onnx")).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, x @ head, rtol=1e-4, atol=1e-5)
