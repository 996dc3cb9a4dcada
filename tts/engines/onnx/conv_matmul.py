"""The decoder's int8 convolutions re-expressed as int8 matrix products with signed weights, bit for bit.

The export quantizes every decoder convolution dynamically: `DynamicQuantizeLinear` gives uint8
activations, `ConvInteger` multiplies them with uint8 weights into int32, and float ops rescale. That
is 69% of the decoder's time, and onnxruntime's CPU `ConvInteger` accepts only uint8 weights, so it
runs on the u8u8 GEMM. On a CPU with VNNI (AVX512-VNNI or AVX-VNNI) the u8s8 GEMM is 2.5 times
faster (208 vs 83 GMAC/s, one thread), and `MatMulInteger` takes signed weights.

So each 1-D `ConvInteger` (group 1, one weight zero point: all 68 of the decoder's) becomes, channels last:

    Transpose x [1, C, T] -> [1, T, C]; Pad with x's zero point (what ConvInteger pads with);
    one Slice per kernel tap (dilation, stride), Concat -> [1, T', K*C]   (im2col)
    MatMulInteger(im2col, weights [K*C, C_out] int8, x zero point, weight zero point) -> [1, T', C_out]
    Transpose -> [1, C_out, T'] int32, the convolution's output

The weights and their zero point move from uint8 to int8 by subtracting 128 from both, so
`w - zero_point` is unchanged, and integer sums are exact: the audio is the export's, bit for bit
(tests/tts/engines/onnx/test_conv_matmul.py), provided the GEMM does not saturate. AVX2 without VNNI
multiplies u8 x s8 pairs into saturating int16 (`vpmaddubsw`), so `u8s8_gemm_is_exact` runs the worst case
(255 x 127 in every pair) through onnxruntime before the engine picks this graph.
"""

from __future__ import annotations

import numpy as np

_OPSET = 13
_UINT8 = 2  # onnx TensorProto.UINT8
_PROBE_DEPTH = 64  # an even number of 255 x 127 products: every pair overflows int16


def convolutions_as_matmul(model) -> int:
    """Rewrite in place each `ConvInteger` of `model` (an onnx ModelProto) that `_rewritable` accepts;
    return how many."""
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    constants = _Constants()
    nodes, rewritten = [], 0
    for node in graph.node:
        attrs = _rewritable(node, initializers)
        if attrs is None:
            nodes.append(node)
            continue
        nodes += _as_matmul(node, attrs, initializers, constants)
        rewritten += 1
    used = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + constants.added)
    return rewritten


class _Constants:
    """The initializers the rewrite adds, in the order first asked for, each name once: the slices'
    starts, ends, axis and steps are shared by every convolution with the same dilation and stride."""

    def __init__(self) -> None:
        self.added: list = []
        self._names: set[str] = set()

    def __call__(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        if name not in self._names:
            self._names.add(name)
            self.added.append(numpy_helper.from_array(value, name))
        return name


def _ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _as_matmul(node, attrs: dict, initializers: dict, constant: _Constants) -> list:
    """The nodes that replace one `ConvInteger`: channels last, padded with x's zero point, im2col, the
    int8 product with the signed weights, channels first again (the module's docstring)."""
    from onnx import helper, numpy_helper

    x, w_name, x_zero, w_zero_name = node.input
    weight = numpy_helper.to_array(initializers[w_name])
    w_zero = numpy_helper.to_array(initializers[w_zero_name])
    c_out, c_in, taps = weight.shape
    (dilation,) = attrs.get("dilations", [1])
    (stride,) = attrs.get("strides", [1])
    pad_left, pad_right = attrs.get("pads", [0, 0])
    prefix = f"{node.name}/as_matmul"
    signed = (weight.astype(np.int16) - 128).astype(np.int8).transpose(2, 1, 0).reshape(taps * c_in, c_out)
    signed_zero = (w_zero.astype(np.int16) - 128).astype(np.int8).reshape(())
    columns = f"{prefix}/channels_last"
    nodes = [helper.make_node("Transpose", [x], [columns], perm=[0, 2, 1], name=columns)]
    if pad_left or pad_right:
        pads = constant(f"{prefix}/pads", _ints(0, pad_left, 0, 0, pad_right, 0))
        padded = f"{prefix}/padded"
        nodes.append(helper.make_node("Pad", [columns, pads, x_zero], [padded], name=padded))
        columns = padded
    if taps > 1 or stride > 1:
        nodes += _im2col(columns, prefix, taps, dilation, stride, constant)
        columns = nodes[-1].output[0]
    product = f"{prefix}/product"
    weights = [constant(f"{prefix}/weight", signed), constant(f"{prefix}/weight_zero_point", signed_zero)]
    nodes.append(
        helper.make_node("MatMulInteger", [columns, weights[0], x_zero, weights[1]], [product], name=product)
    )
    nodes.append(
        helper.make_node("Transpose", [product], [node.output[0]], perm=[0, 2, 1], name=f"{prefix}/out")
    )
    return nodes


def _im2col(columns: str, prefix: str, taps: int, dilation: int, stride: int, constant: _Constants) -> list:
    """One Slice per kernel tap of the channels-last `columns` (its dilation and stride), concatenated
    along the channels: [1, T', taps * C]; the last node's output is the im2col."""
    from onnx import helper

    nodes, slices = [], []
    for tap in range(taps):
        behind = dilation * (taps - 1 - tap)  # frames the last tap reads past this one
        name = f"{prefix}/tap{tap}"
        inputs = [
            columns,
            constant(f"as_matmul/start{dilation * tap}", _ints(dilation * tap)),
            constant(f"as_matmul/end{behind}", _ints(-behind if behind else np.iinfo(np.int64).max)),
            constant("as_matmul/time_axis", _ints(1)),
            constant(f"as_matmul/step{stride}", _ints(stride)),
        ]
        nodes.append(helper.make_node("Slice", inputs, [name], name=name))
        slices.append(name)
    im2col = f"{prefix}/im2col"
    nodes.append(helper.make_node("Concat", slices, [im2col], axis=2, name=im2col))
    return nodes


def _rewritable(node, initializers: dict) -> dict | None:
    """The attributes of a 1-D, group-1 `ConvInteger` with explicit pads, constant uint8 weights and one
    constant uint8 weight zero point (what onnxruntime's `ConvInteger` runs); None for anything else,
    which stays as it is (the export has nothing else)."""
    from onnx import helper

    if node.op_type != "ConvInteger" or len(node.input) != 4 or not node.input[2]:
        return None
    weight, w_zero = initializers.get(node.input[1]), initializers.get(node.input[3])
    if weight is None or w_zero is None or len(weight.dims) != 3 or list(w_zero.dims) not in ([], [1]):
        return None
    if weight.data_type != _UINT8 or w_zero.data_type != _UINT8:
        return None
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    if attrs.get("group", 1) != 1 or attrs.get("auto_pad", b"NOTSET") != b"NOTSET":
        return None
    return attrs


def u8s8_gemm_is_exact(providers: list[str]) -> bool:
    """Whether onnxruntime's u8s8 integer GEMM sums 255 x 127 products without saturating here."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rows, depth, cols = 16, _PROBE_DEPTH, 16
    weight = numpy_helper.from_array(np.full((depth, cols), 127, dtype=np.int8), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w"], ["y"])],
        "u8s8_probe",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [rows, depth])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [rows, cols])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=providers)
    (product,) = session.run(None, {"x": np.full((rows, depth), 255, dtype=np.uint8)})
    return bool(np.all(product == 255 * 127 * depth))
