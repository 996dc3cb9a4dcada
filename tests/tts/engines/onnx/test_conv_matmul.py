"""The decoder's int8 convolutions as int8 matrix products: the export's integers, bit for bit."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tts.config import TTSConfig
from tts.engines.onnx import engine as engine_module
from tts.engines.onnx.conv_matmul import convolutions_as_matmul, u8s8_gemm_is_exact
from tts.engines.onnx.engine import OnnxEngine

CPU = ["CPUExecutionProvider"]
EXACT = u8s8_gemm_is_exact(CPU)
needs_exact_gemm = pytest.mark.skipif(
    not EXACT, reason="onnxruntime's u8s8 GEMM saturates on this CPU (no VNNI)"
)


def conv_integer_model(c_in, c_out, taps, w_zero, **attrs) -> onnx.ModelProto:
    """One ConvInteger; its weight zero point `w_zero` a scalar, or a list of one."""
    rng = np.random.default_rng(taps * 100 + c_in)
    weight = rng.integers(0, 256, (c_out, c_in // attrs.get("group", 1), taps), dtype=np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zero", "w_zero"], ["y"], name="conv", **attrs)
    graph = helper.make_graph(
        [node],
        "conv",
        [
            helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c_in, None]),
            helper.make_tensor_value_info("x_zero", TensorProto.UINT8, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, c_out, None])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.array(w_zero, np.uint8), "w_zero")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def run(model: onnx.ModelProto, x: np.ndarray, x_zero: int) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=CPU)
    (y,) = session.run(None, {"x": x, "x_zero": np.array(x_zero, np.uint8)})
    return y


# The decoder's shapes: pointwise, kernels 3/7/11 with dilations 1/3/5 ("same" padding), the
# downsampling stride 2, and the noise branch's kernel 12 with stride 6.
CASES = [
    dict(taps=1, pads=[0, 0]),
    dict(taps=3, pads=[1, 1]),
    dict(taps=7, pads=[9, 9], dilations=[3]),
    dict(taps=11, pads=[25, 25], dilations=[5]),
    dict(taps=3, pads=[1, 1], strides=[2]),
    dict(taps=12, pads=[3, 3], strides=[6]),
    dict(taps=5, pads=[0, 4], dilations=[2]),
]


@needs_exact_gemm
@pytest.mark.parametrize("case", CASES, ids=lambda case: "-".join(f"{k}{v}" for k, v in case.items()))
@pytest.mark.parametrize(("x_zero", "w_zero"), [(131, 117), (0, 255), (255, 0), (90, [128])])
def test_a_conv_integer_becomes_a_matmul_with_the_same_integers(case, x_zero, w_zero):
    taps = case["taps"]
    attrs = {key: value for key, value in case.items() if key != "taps"}
    model = conv_integer_model(24, 16, taps, w_zero, kernel_shape=[taps], **attrs)
    x = np.random.default_rng(7).integers(0, 256, (1, 24, 97), dtype=np.uint8)
    expected = run(model, x, x_zero)
    assert convolutions_as_matmul(model) == 1
    onnx.checker.check_model(model)
    assert [node.op_type for node in model.graph.node].count("ConvInteger") == 0
    assert [node.op_type for node in model.graph.node].count("MatMulInteger") == 1
    actual = run(model, x, x_zero)
    assert actual.dtype == np.int32 and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_what_it_cannot_rewrite_exactly_is_left_as_it_is():
    grouped = conv_integer_model(24, 16, 3, 128, kernel_shape=[3], pads=[1, 1], group=2)
    x = np.random.default_rng(3).integers(0, 256, (1, 24, 50), dtype=np.uint8)
    expected = run(grouped, x, 7)
    assert convolutions_as_matmul(grouped) == 0
    assert [node.op_type for node in grouped.graph.node] == ["ConvInteger"]
    np.testing.assert_array_equal(run(grouped, x, 7), expected)


def test_the_probe_predicts_whether_a_rewritten_convolution_is_exact():
    """The worst case through a rewritten convolution: 64 products of 255 x 127, in pairs that overflow
    an int16 accumulator. The probe says whether this CPU gets it right, and so whether to rewrite."""
    model = conv_integer_model(64, 1, 1, 128, kernel_shape=[1])  # weight 255 - zero point 128 = 127
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.full((1, 64, 1), 255, np.uint8), "w"))
    assert run(model, np.full((1, 64, 1), 255, np.uint8), 0).item() == 255 * 127 * 64
    convolutions_as_matmul(model)
    rewritten = run(model, np.full((1, 64, 1), 255, np.uint8), 0).item()
    assert (rewritten == 255 * 127 * 64) == EXACT, (rewritten, EXACT)


def test_the_engine_picks_matmul_only_where_the_gemm_is_exact(monkeypatch):
    config = TTSConfig.from_env(threads=1, window_lanes=1)
    assert OnnxEngine(config).int8_conv == ("matmul" if EXACT else "conv")
    assert OnnxEngine(TTSConfig.from_env(threads=1, window_lanes=1, int8_conv="conv")).int8_conv == "conv"
    monkeypatch.setattr(engine_module, "u8s8_gemm_is_exact", lambda providers: False)
    assert OnnxEngine(config).int8_conv == "conv"
    with pytest.raises(RuntimeError, match="saturates"):
        OnnxEngine(TTSConfig.from_env(threads=1, window_lanes=1, int8_conv="matmul"))


def test_the_choice_is_configuration(monkeypatch):
    monkeypatch.setenv("TTS_INT8_CONV", "conv")
    assert TTSConfig.from_env().int8_conv == "conv"
    with pytest.raises(ValueError, match="TTS_INT8_CONV"):
        TTSConfig(int8_conv="fast")


@needs_exact_gemm
def test_both_decoders_give_the_same_audio_bit_for_bit(engine):
    assert engine.int8_conv == "matmul"
    conv = OnnxEngine(TTSConfig.from_env(threads=2, int8_conv="conv"))
    (tokens,) = engine.segments("It shipped yesterday and should arrive here on Thursday morning.", "en-us")
    feats = engine.features(tokens, "jm_kumo", 1.0)
    for start, stop in ((0, 20), (12, 60), (0, feats.frames)):
        np.testing.assert_array_equal(engine.decode(feats, start, stop), conv.decode(feats, start, stop))
    lanes = [(12, 40), (40, feats.frames)]
    for ours, theirs in zip(
        engine.decode_windows(feats, lanes), conv.decode_windows(feats, lanes), strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)
