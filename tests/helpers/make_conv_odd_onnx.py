#!/usr/bin/python3
"""make_conv_odd_onnx.py OUTDIR: one-op models of the convolution family at odd geometries
(groups, depthwise, dilations, strides, asymmetric pads, 1-D and 3-D, transposed with
output_padding, a fused bias + residual + activation, windowed pools with ceil_mode and
padding counted or not) and DenseNet's Concat -> BatchNormalization -> Relu -> Conv chains
(channels blocked or not, the norm's output shared or a graph output), squeeze-excitation blocks (their
global pool and per-channel Mul or Add on a blocked source) and UNet levels (a skip tensor a pool and a
Concat share, a ConvTranspose after a Conv, a Concat of mixed layouts into a Conv), weights as initializers,
the batch dim dynamic.  For each, with
onnxruntime's outputs as the reference, OUTDIR/<case>/ gets model.onnx, model.json and
manifest.json in the format onnx_engine_run reads (tests/helpers/onnx_reference.py).

Exit status 77 when onnx, onnxruntime or numpy cannot be imported."""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

BATCHES = (1, 3)


def conv(name, cin, cout, spatial, k, group=1, strides=None, dil=None, pads=None, bias=True, act=None,
         resid=False, transpose=False, out_pad=None):
    """A Conv (or ConvTranspose) with initializer weights, optionally + residual input and an activation."""
    rng = np.random.default_rng(len(name))
    wshape = [cin, cout // group] + list(k) if transpose else [cout, cin // group] + list(k)
    inits = [numpy_helper.from_array(rng.standard_normal(wshape).astype(np.float32) * 0.3, "W")]
    ins = ["X", "W"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal([cout]).astype(np.float32), "B"))
        ins.append("B")
    attrs = {"group": group, "kernel_shape": list(k)}
    if strides:
        attrs["strides"] = strides
    if dil:
        attrs["dilations"] = dil
    if pads:
        attrs["pads"] = pads
    if out_pad:
        attrs["output_padding"] = out_pad
    nodes = [helper.make_node("ConvTranspose" if transpose else "Conv", ins, ["C"], **attrs)]
    last = "C"
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", cin] + list(spatial))]
    if resid:
        nodes.append(helper.make_node("Add", [last, "Z"], ["S"]))
        last = "S"
    if act is not None:
        op, kw = act
        nodes.append(helper.make_node(op, [last], ["A"], **kw))
        last = "A"
    nodes.append(helper.make_node("Identity", [last], ["Y"]))
    return name, nodes, graph_in, inits, resid


def pool(name, op, c, spatial, k, **attrs):
    """A windowed MaxPool or AveragePool."""
    nodes = [helper.make_node(op, ["X"], ["Y"], kernel_shape=list(k), **attrs)]
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", c] + list(spatial))]
    return name, nodes, graph_in, [], False


def bn_inits(rng, prefix, c):
    """A BatchNormalization's scale, bias, mean and variance (positive) as initializers, and their names."""
    vals = [rng.standard_normal(c) * 0.5 + 1, rng.standard_normal(c) * 0.5, rng.standard_normal(c) * 0.5,
            rng.uniform(0.25, 2.0, c)]
    names = [f"{prefix}_{k}" for k in ("scale", "bias", "mean", "var")]
    return names, [numpy_helper.from_array(v.astype(np.float32), n) for n, v in zip(names, vals)]


def dense(name, cin, growth, layers, spatial, tail="pool"):
    """A DenseNet block as torchvision exports it, after a 3x3 Conv stem (so that oneDNN writes every source of
    the Concats): per layer Concat (of the block input and every earlier
    layer's output; one source for the first) -> BatchNormalization -> Relu -> Conv 1x1 (bias, Relu) -> Conv 3x3;
    then Concat -> BatchNormalization -> Relu and either a 1x1 Conv, a Pad of zeros and an AveragePool (tail
    "pool", a transition as torch exports it) or
    a GlobalAveragePool (tail "global", the classifier's head)."""
    rng = np.random.default_rng(len(name) + 7)
    nodes, inits, feats, ch = [], [], ["stem"], cin

    def conv_w(n, o, i, k):
        return numpy_helper.from_array((rng.standard_normal([o, i, k, k]) / np.sqrt(i * k * k)).astype(np.float32), n)

    def norm_relu(i, src, c):
        names, ts = bn_inits(rng, f"bn{i}", c)
        inits.extend(ts)
        nodes.append(helper.make_node("BatchNormalization", [src] + names, [f"n{i}"], epsilon=1e-5))
        nodes.append(helper.make_node("Relu", [f"n{i}"], [f"r{i}"]))
        return f"r{i}"

    inits.append(conv_w("ws", cin, cin, 3))
    nodes.append(helper.make_node("Conv", ["X", "ws"], ["stem"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    for i in range(layers + 1):
        nodes.append(helper.make_node("Concat", list(feats), [f"cat{i}"], axis=1))
        r = norm_relu(i, f"cat{i}", ch)
        if i == layers:
            break
        inits += [conv_w(f"w1_{i}", 2 * growth, ch, 1),
                  numpy_helper.from_array(rng.standard_normal(2 * growth).astype(np.float32) * 0.1, f"b1_{i}"),
                  conv_w(f"w2_{i}", growth, 2 * growth, 3)]
        nodes += [helper.make_node("Conv", [r, f"w1_{i}", f"b1_{i}"], [f"c1_{i}"], kernel_shape=[1, 1]),
                  helper.make_node("Relu", [f"c1_{i}"], [f"a1_{i}"]),
                  helper.make_node("Conv", [f"a1_{i}", f"w2_{i}"], [f"c2_{i}"], kernel_shape=[3, 3],
                                   pads=[1, 1, 1, 1])]
        feats.append(f"c2_{i}")
        ch += growth
    if tail == "pool":
        inits += [conv_w("wt", ch // 2, ch, 1), numpy_helper.from_array(np.zeros(8, np.int64), "zeros")]
        nodes += [helper.make_node("Conv", [r, "wt"], ["t"], kernel_shape=[1, 1]),
                  helper.make_node("Pad", ["t", "zeros"], ["tp"]),
                  helper.make_node("AveragePool", ["tp"], ["Y"], kernel_shape=[2, 2], strides=[2, 2])]
    else:
        nodes.append(helper.make_node("GlobalAveragePool", [r], ["Y"]))
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", cin] + list(spatial))]
    return name, nodes, graph_in, inits, False


def norm(name, c, spatial, readers, stem=True):
    """BatchNormalization -> Relu -> Conv 3x3, the norm's source a Conv + MaxPool stem (so that oneDNN leaves it
    blocked; a Conv alone would take the norm in) or (stem False) the graph input; readers "resid": the norm's
    output is also added to the Conv's (the Conv's residual), so the Relu cannot take it over."""
    rng = np.random.default_rng(len(name) + 11)
    names, inits = bn_inits(rng, "bn", c)
    k = [3] * len(spatial)
    for w in ("W", "WS"):
        inits.append(numpy_helper.from_array((rng.standard_normal([c, c] + k) /
                                              np.sqrt(c * 3 ** len(spatial))).astype(np.float32), w))
    src = "X"
    nodes = []
    if stem:
        nodes += [helper.make_node("Conv", ["X", "WS"], ["s0"], kernel_shape=k, pads=[1] * (2 * len(spatial))),
                  helper.make_node("MaxPool", ["s0"], ["s1"], kernel_shape=k, pads=[1] * (2 * len(spatial)))]
        src = "s1"
    nodes += [helper.make_node("BatchNormalization", [src] + names, ["n"], epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["r", "W"], ["c"], kernel_shape=[3] * len(spatial),
                              pads=[1] * (2 * len(spatial)))]
    last = "c"
    if readers == "resid":
        nodes.append(helper.make_node("Add", ["c", "n"], ["s"]))
        last = "s"
    nodes.append(helper.make_node("Identity", [last], ["Y"]))
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", c] + list(spatial))]
    return name, nodes, graph_in, inits, False


def norm_tail(name, c, spatial, relu=True):
    """Conv 3x3, Concat with the input, BatchNormalization [-> Relu] as the graph's output (written plain)."""
    rng = np.random.default_rng(len(name) + 13)
    names, inits = bn_inits(rng, "bn", c)
    inits.append(numpy_helper.from_array((rng.standard_normal([c, c, 3, 3]) / np.sqrt(9 * c)).astype(np.float32),
                                         "W"))
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["c", "X"], ["k"], axis=1)]
    names2, inits2 = bn_inits(rng, "bn2", 2 * c)
    nodes.append(helper.make_node("BatchNormalization", ["k"] + names2, ["n"], epsilon=1e-5))
    nodes.append(helper.make_node("Relu", ["n"], ["Y"]) if relu else helper.make_node("Identity", ["n"], ["Y"]))
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", c] + list(spatial))]
    return name, nodes, graph_in, inits + inits2, False


def unet_level(name, cin, c, spatial, readers_after=False):
    """One UNet level as torch exports it: Conv 3x3 + Relu -> s, which a MaxPool 2x2 and (later) a Concat both read;
    pool -> Conv 3x3 (2c) + Relu -> ConvTranspose 2x2 stride 2 (back to c) -> Concat(up, s) -> Conv 3x3 -> Y.
    oneDNN keeps s channels-last for the pool and the Concat, the Conv before the ConvTranspose writes its own
    layout for the ConvTranspose's reorder, and the Concat of 16-channel blocks and channels-last writes
    channels-last for the Conv after it.  readers_after: a Relu of s read after the Concat too (the kernel
    library's), so s must stay plain."""
    rng = np.random.default_rng(len(name) + 29)

    def w(n, shape):
        fan = int(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32), n)

    def b(n, k):
        return numpy_helper.from_array(rng.standard_normal([k]).astype(np.float32) * 0.1, n)

    inits = [w("w1", [c, cin, 3, 3]), b("b1", c), w("w2", [2 * c, c, 3, 3]), b("b2", 2 * c),
             w("wt", [2 * c, c, 2, 2]), b("bt", c), w("w3", [c, 2 * c, 3, 3]), b("b3", c)]
    p1 = [1, 1, 1, 1]
    nodes = [helper.make_node("Conv", ["X", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=p1),
             helper.make_node("Relu", ["c1"], ["s"]),
             helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=p1),
             helper.make_node("Relu", ["c2"], ["q"]),
             helper.make_node("ConvTranspose", ["q", "wt", "bt"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Concat", ["u", "s"], ["k"], axis=1),
             helper.make_node("Conv", ["k", "w3", "b3"], ["y3"], kernel_shape=[3, 3], pads=p1)]
    if readers_after:
        nodes += [helper.make_node("Sigmoid", ["s"], ["g"]), helper.make_node("Mul", ["y3", "g"], ["Y"])]
    else:
        nodes.append(helper.make_node("Identity", ["y3"], ["Y"]))
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", cin] + list(spatial))]
    return name, nodes, graph_in, inits, False


def se(name, c, spatial, first="scale", op="Mul", const_scale=False, tail=True, group=None):
    """A squeeze-excitation block as torchvision exports it, after a Conv stem and a depthwise Conv + Relu (so that
    oneDNN writes x blocked): GlobalAveragePool(x) -> Conv 1x1 -> Relu -> Conv 1x1 -> HardSigmoid -> op with x (the
    scale first or second), then a 1x1 Conv (tail) or the graph's output.  const_scale: x op a constant [c, 1, 1]
    instead, plus GlobalMaxPool(x) added back per channel.  group: the second Conv's groups (default c: depthwise;
    regnet's grouped Convs leave x in 8-channel blocks, which stay with the kernel library)."""
    rng = np.random.default_rng(len(name) + 17)
    sq = max(c // 4, 1)

    def w(n, o, i, k=1):
        return numpy_helper.from_array((rng.standard_normal([o, i, k, k]) / np.sqrt(i * k * k)).astype(np.float32), n)

    group = group or c
    inits = [w("ws", c, c, 3), w("wd", c, c // group, 3)]
    nodes = [helper.make_node("Conv", ["X", "ws"], ["s0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["s0", "wd"], ["d"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group),
             helper.make_node("Relu", ["d"], ["x"])]
    if const_scale:
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, [c, 1, 1]).astype(np.float32), "S"))
        nodes += [helper.make_node(op, ["S", "x"] if first == "scale" else ["x", "S"], ["m0"]),
                  helper.make_node("GlobalMaxPool", ["x"], ["g"]),
                  helper.make_node("Add", ["m0", "g"], ["m"])]
    else:
        inits += [w("w1", sq, c), numpy_helper.from_array(rng.standard_normal(sq).astype(np.float32), "b1"),
                  w("w2", c, sq), numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b2")]
        nodes += [helper.make_node("GlobalAveragePool", ["x"], ["p"]),
                  helper.make_node("Conv", ["p", "w1", "b1"], ["f1"], kernel_shape=[1, 1]),
                  helper.make_node("Relu", ["f1"], ["r1"]),
                  helper.make_node("Conv", ["r1", "w2", "b2"], ["f2"], kernel_shape=[1, 1]),
                  helper.make_node("HardSigmoid", ["f2"], ["h"], alpha=1.0 / 6, beta=0.5),
                  helper.make_node(op, ["h", "x"] if first == "scale" else ["x", "h"], ["m"])]
    if tail:
        inits.append(w("wp", c, c))
        nodes.append(helper.make_node("Conv", ["m", "wp"], ["Y"], kernel_shape=[1, 1]))
    else:
        nodes.append(helper.make_node("Identity", ["m"], ["Y"]))
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", c] + list(spatial))]
    return name, nodes, graph_in, inits, False


CASES = [
    conv("grouped_dilated", 6, 9, (11, 13), (3, 2), group=3, strides=[2, 1], dil=[2, 2], pads=[1, 0, 2, 1]),
    conv("depthwise_relu", 8, 8, (9, 7), (3, 3), group=8, pads=[1, 1, 1, 1], act=("Relu", {})),
    conv("depthwise_mult", 4, 8, (10, 10), (5, 5), group=4, strides=[2, 2], pads=[2, 2, 2, 2]),
    conv("pointwise_clip", 5, 7, (6, 5), (1, 1), act=("Clip", {}), bias=True),
    conv("strided_1x1", 16, 24, (9, 9), (1, 1), strides=[2, 2], bias=False),
    conv("conv1d", 4, 6, (23,), (5,), strides=[3], dil=[2], pads=[2, 1]),
    conv("conv3d", 3, 4, (5, 7, 6), (2, 3, 3), strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 2]),
    conv("resid_relu", 8, 8, (7, 7), (3, 3), pads=[1, 1, 1, 1], resid=True, act=("Relu", {})),
    conv("hardsigmoid", 6, 6, (8, 8), (3, 3), pads=[1, 1, 1, 1], act=("HardSigmoid", {"alpha": 0.2, "beta": 0.5})),
    conv("sigmoid", 6, 12, (5, 9), (3, 3), act=("Sigmoid", {})),
    conv("leaky", 6, 12, (5, 9), (3, 1), act=("LeakyRelu", {"alpha": 0.1})),
    conv("hardswish", 16, 16, (8, 8), (3, 3), group=16, pads=[1, 1, 1, 1], act=("HardSwish", {})),
    conv("transpose_grouped", 4, 6, (5, 6), (3, 3), group=2, strides=[2, 2], pads=[1, 1, 1, 1],
         out_pad=[1, 1], transpose=True),
    conv("transpose_outpad_past_pad", 3, 5, (7,), (4,), strides=[3], out_pad=[2], transpose=True),
    conv("transpose_dilated", 5, 4, (6, 5), (3, 2), strides=[1, 2], dil=[2, 1], pads=[0, 1, 2, 0],
         transpose=True, act=("Relu", {})),
    conv("transpose3d", 2, 3, (3, 4, 5), (2, 2, 3), strides=[2, 2, 1], out_pad=[1, 0, 0], transpose=True),
    pool("maxpool_ceil", "MaxPool", 5, (10, 11), (3, 3), strides=[2, 2], ceil_mode=1),
    pool("maxpool_pad_dil", "MaxPool", 3, (9, 12), (2, 3), strides=[1, 2], pads=[1, 1, 0, 1], dilations=[2, 1]),
    pool("avgpool_incl", "AveragePool", 4, (9, 9), (3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
         count_include_pad=1),
    pool("avgpool_excl_ceil", "AveragePool", 4, (10, 9), (3, 2), strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1),
    pool("avgpool_incl_ceil", "AveragePool", 4, (10, 9), (3, 3), strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
         count_include_pad=1),
    pool("maxpool1d", "MaxPool", 3, (17,), (4,), strides=[3], pads=[1, 2]),
    pool("avgpool3d", "AveragePool", 2, (5, 6, 7), (2, 3, 2), strides=[1, 2, 2]),
    dense("dense_block", 32, 16, 4, (9, 10)),
    dense("dense_block_head", 64, 32, 3, (6, 6), tail="global"),
    dense("dense_block_odd", 12, 6, 3, (7, 5)),
    norm("norm_relu_conv", 16, (8, 7), ""),
    norm("norm_relu_conv_plain", 16, (8, 7), "", stem=False),
    norm("norm_relu_conv_odd", 5, (6, 9), ""),
    norm("norm_shared_resid", 16, (7, 7), "resid"),
    norm("norm_relu_conv1d", 16, (13,), ""),
    norm("norm_relu_conv3d", 8, (4, 5, 6), ""),
    norm_tail("norm_relu_out", 16, (6, 5)),
    norm_tail("norm_out", 16, (6, 5), relu=False),
    se("se_block", 32, (8, 8)),
    se("se_block_x_first_add", 12, (7, 5), first="x", op="Add"),
    se("se_block_out", 24, (5, 6), tail=False),
    se("se_const_scale", 16, (6, 6), const_scale=True),
    se("se_const_scale_x_first", 20, (5, 7), first="x", const_scale=True, tail=False),
    se("se_grouped", 48, (6, 6), group=6),
    unet_level("unet_level", 3, 16, (16, 16)),
    unet_level("unet_level_wide", 32, 32, (12, 10)),
    unet_level("unet_level_shared", 8, 16, (8, 12), readers_after=True),
    unet_level("unet_level_odd", 5, 12, (10, 14)),
]


def write_case(out, name, nodes, graph_in, inits, resid):
    """Write one case's model, its inputs and onnxruntime's outputs, and the manifest."""
    root = os.path.join(out, name)
    os.makedirs(root, exist_ok=True)
    rank = len(graph_in[0].type.tensor_type.shape.dim)
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N"] + [f"y{i}" for i in range(1, rank)])]
    if resid:
        # The residual input has the convolution's output shape: ask onnxruntime for it.
        probe = helper.make_model(helper.make_graph([nodes[0], helper.make_node("Identity", ["C"], ["Y"])], name,
                                                    graph_in, outs, inits),
                                  opset_imports=[helper.make_opsetid("", 17)])
        probe.ir_version = 8
        x0 = np.zeros([1] + [d.dim_value for d in graph_in[0].type.tensor_type.shape.dim][1:], np.float32)
        ydims = list(ort.InferenceSession(probe.SerializeToString(),
                                          providers=["CPUExecutionProvider"]).run(None, {"X": x0})[0].shape[1:])
        graph_in = graph_in + [helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N"] + ydims)]
    model = helper.make_model(helper.make_graph(nodes, name, graph_in, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    onnx.save(model, os.path.join(root, "model.onnx"))
    with open(os.path.join(root, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": max(BATCHES)}, f)
    rng = np.random.default_rng(1)
    cases = []
    for b in BATCHES:
        sub = f"b{b}"
        os.makedirs(os.path.join(root, sub), exist_ok=True)
        feeds, entry = {}, {"batch": b, "dir": sub, "inputs": [], "outputs": []}
        for v in graph_in:
            dims = [b] + [d.dim_value for d in v.type.tensor_type.shape.dim][1:]
            feeds[v.name] = rng.standard_normal(dims).astype(np.float32)
            rel = f"{sub}/{v.name}.bin"
            feeds[v.name].tofile(os.path.join(root, rel))
            entry["inputs"].append({"name": v.name, "datatype": "FP32", "shape": dims, "file": rel})
        y = sess.run(None, feeds)[0]
        rel = f"{sub}/Y.ort.bin"
        y.astype(np.float32).tofile(os.path.join(root, rel))
        entry["outputs"].append({"name": "Y", "datatype": "FP32", "shape": list(y.shape), "ort_file": rel})
        cases.append(entry)
    with open(os.path.join(root, "manifest.json"), "w") as f:
        json.dump({"model": name, "onnx": "model.onnx", "opset": 17, "cases": cases}, f, indent=1)
    return os.path.join(root, "manifest.json")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_conv_odd_onnx.py OUTDIR")
    for case in CASES:
        print(write_case(sys.argv[1], *case))


if __name__ == "__main__":
    main()
