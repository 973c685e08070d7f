#!/usr/bin/env python3
"""shape_fuzz.py: generated ONNX graphs with variable dims, served by inferd and checked against onnxruntime.

  shape_fuzz.py make DIR         write DIR/<model>/{model.onnx,model.json} and DIR/shape_fuzz.json
  shape_fuzz.py check URL DIR [SOCKET]
                                 every model of DIR/shape_fuzz.json through the daemon at URL (and its shm
                                 SOCKET: client/python on PYTHONPATH, INFERD_LIB naming libinferd)

The graphs (opset 17, random weights) take variable dims (dim_param names, 'N' the batch) through ops whose
output size is not a one-to-one function of an input size: strided Conv (1-D and 2-D) and MaxPool/AveragePool
with ceil_mode 0 and 1, Resize by scales and by sizes computed from Shape arithmetic, Slice with out-of-range
and negative starts, ends and steps, Reshape with 0 and -1 (constant targets and targets built by Shape ->
Gather -> Mul/Div -> Concat), Expand, Range, ConstantOfShape, Concat, Unsqueeze/Squeeze, Transpose, integer
Div/Mul/Add/Max on shapes.  Each parameter (kernel, stride, pads, scales, slice bounds, each dim's maximum)
comes from a seeded generator: SHAPE_FUZZ_SEED (default 1), printed by both commands.

check, per model:
  - it is ready, and GET /v2/models/{m} gives -1 for every input and output dim that varies with the inputs
    and the fixed value otherwise (the output dims onnxruntime gives over a sweep of every variable dim);
  - 29 requests at random shapes (every variable dim varied; batch 1 to max_batch_size), over HTTP JSON, the
    binary extension and (with SOCKET) shared memory in turn: 9 sequential ones, the largest shape first and
    each shape different from the one before; two rounds of 8 concurrent requests, of different shapes, then
    of pairs of equal shapes (rows batch together); a large request followed by a small one, twice.  Each
    answer's shape must equal onnxruntime's exactly and its values agree within 1e-4 (relative, plus 1e-4 of
    the largest |value|);
  - shapes inside the bounds that onnxruntime refuses (met while sampling) get a 400 naming a node of the
    graph; shapes a conv/pool window does not fit get onnxruntime's answer or such a 400; the model built
    to have one (a Reshape by 8 of 4*T values, so odd T cannot be taken) gets a 400 naming its node.  Over
    shm, whose wire carries an error's code and not its text, a refusal is an InvalidRequest.
A failure prints the model, what it is built of, the request's shape and the mismatch.  Exit 77 without onnx,
onnxruntime or numpy.
"""
import http.client
import json
import os
import sys
import threading
import urllib.parse

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    import onnxruntime as ort
except ImportError as e:
    print("SKIP: python3 cannot import numpy, onnx and onnxruntime (%s)" % e)
    sys.exit(77)

DEFAULT_MAX = 512       # the daemon's default maximum of a variable dim without max_dims
MAX_BATCH = 4
INT64_MAX = 2**63 - 1
MANIFEST = "shape_fuzz.json"


def seed_from_env():
    s = os.environ.get("SHAPE_FUZZ_SEED", "1")
    try:
        return int(s)
    except ValueError:
        sys.exit("shape_fuzz: SHAPE_FUZZ_SEED=%r is not an integer" % s)


# ---------------------------------------------------------------- graph building

class Builder:
    """Nodes, constants, inputs and outputs of one graph; every node has a name the daemon can cite."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = 0
        self.vars = {}          # variable dim name -> maximum (None: the daemon's default)
        self.mins = {}          # variable dim name -> smallest size every window of the graph fits in
        self.notes = []         # what the graph is built of, printed on failure
        self.invalid = None     # (shape dict, node name) a request the graph cannot take, if any

    def fresh(self, base):
        self.count += 1
        return "%s_%d" % (base, self.count)

    def op(self, op_type, ins, out=None, name=None, **attrs):
        name = name or self.fresh(op_type.lower())
        y = out or name + "_y"
        self.nodes.append(helper.make_node(op_type, ins, [y], name=name, **attrs))
        return y

    def ints(self, vals, scalar=False):
        n = self.fresh("i64")
        a = np.array(vals, dtype=np.int64)
        self.inits.append(helper.make_tensor(n, TensorProto.INT64, [] if scalar else list(a.shape),
                                             a.flatten().tolist()))
        return n

    def floats(self, arr):
        n = self.fresh("f32")
        a = np.asarray(arr, dtype=np.float32)
        self.inits.append(helper.make_tensor(n, TensorProto.FLOAT, list(a.shape), a.flatten().tolist()))
        return n

    def weight(self, shape, fan_in):
        return self.floats(self.rng.standard_normal(shape).astype(np.float32) / np.sqrt(max(fan_in, 1)))

    def inp(self, name, dims, maxes):
        """An FP32 input [N, dims...]; maxes gives each variable dim's maximum (None: the default)."""
        for d in dims:
            if isinstance(d, str):
                self.vars.setdefault(d, maxes[d])
        self.inputs.append((name, ["N"] + list(dims)))
        return name

    def out(self, tensor, name):
        self.nodes.append(helper.make_node("Identity", [tensor], [name], name=self.fresh("identity")))
        self.outputs.append(name)

    def least(self, var, size):
        """var must be at least size for every conv/pool window to fit inside the padded input."""
        self.mins[var] = max(self.mins.get(var, 1), size)

    def note(self, fmt, *args):
        self.notes.append(fmt % args if args else fmt)

    # Shape helpers: [1] pieces (Gather with a 1-D index, or Shape start/end) and scalars.
    def dim1(self, x, i):
        return self.op("Gather", [self.op("Shape", [x]), self.ints([i])], axis=0)

    def dims_range(self, x, start, end):
        return self.op("Shape", [x], start=start, end=end)

    def dim0(self, x, i):
        return self.op("Gather", [self.op("Shape", [x]), self.ints(i, scalar=True)], axis=0)

    def arith(self, op_type, a, b):
        return self.op(op_type, [a, b])

    def model(self):
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in self.inputs]
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in self.outputs]
        g = helper.make_graph(self.nodes, "shape_fuzz", ins, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        # The outputs' declared types as an exporter writes them: onnx's inferred (often symbolic) dims.
        inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(m, strict_mode=True).graph.output}
        for o in m.graph.output:
            o.CopyFrom(inferred[o.name])
        onnx.checker.check_model(m, full_check=True)
        return m


def pick(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def small_max(rng):
    return int(rng.integers(12, 41))


# ---------------------------------------------------------------- the graph templates

def t_conv1d(b, r):
    """Strided, padded, dilated 1-D conv (ceil/floor of (T + pads - extent) / stride)."""
    k, s, d = pick(r, [1, 2, 3, 4, 5]), pick(r, [2, 3, 4]), pick(r, [1, 1, 2])
    pads = [int(r.integers(0, k)), int(r.integers(0, k))]
    x = b.inp("x", [3, "T"], {"T": pick(r, [None, small_max(r)])})
    y = b.op("Conv", [x, b.weight([4, 3, k], 3 * k), b.weight([4], 1)], kernel_shape=[k], strides=[s],
             pads=pads, dilations=[d])
    b.least("T", d * (k - 1) + 1 - sum(pads))
    b.note("Conv1d k%d s%d d%d pads %s", k, s, d, pads)
    b.out(b.op("Relu", [y]), "y")


def t_conv2d(b, r):
    """Strided 2-D conv over two variable dims, then GlobalAveragePool as a second output."""
    k = [pick(r, [1, 2, 3]), pick(r, [2, 3, 4])]
    s = [pick(r, [1, 2, 3]), pick(r, [2, 3])]
    pads = [int(r.integers(0, k[0])), int(r.integers(0, k[1])), int(r.integers(0, k[0])),
            int(r.integers(0, k[1]))]
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    y = b.op("Conv", [x, b.weight([3, 2] + k, 2 * k[0] * k[1]), b.weight([3], 1)], kernel_shape=k, strides=s,
             pads=pads)
    b.least("H", k[0] - pads[0] - pads[2])
    b.least("W", k[1] - pads[1] - pads[3])
    b.note("Conv2d k%s s%s pads %s", k, s, pads)
    b.out(y, "y")
    b.out(b.op("GlobalAveragePool", [y]), "g")


def t_maxpool(b, r):
    """1-D MaxPool with ceil_mode 0 or 1."""
    k, s, ceil = pick(r, [2, 3, 4]), pick(r, [2, 3]), int(r.integers(0, 2))
    pads = [int(r.integers(0, k // 2 + 1)), int(r.integers(0, k // 2 + 1))]
    x = b.inp("x", [2, "T"], {"T": pick(r, [None, small_max(r)])})
    b.least("T", k - sum(pads))
    b.note("MaxPool1d k%d s%d pads %s ceil_mode %d", k, s, pads, ceil)
    b.out(b.op("MaxPool", [x], kernel_shape=[k], strides=[s], pads=pads, ceil_mode=ceil), "y")


def t_avgpool2d(b, r):
    """2-D AveragePool with ceil_mode and count_include_pad drawn."""
    k = [pick(r, [2, 3]), pick(r, [2, 3])]
    s = [pick(r, [2, 3]), pick(r, [1, 2])]
    ceil, cip = int(r.integers(0, 2)), int(r.integers(0, 2))
    pads = [int(r.integers(0, 2)), 0, int(r.integers(0, 2)), 1]
    x = b.inp("x", [3, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    b.least("H", k[0] - pads[0] - pads[2])
    b.least("W", k[1] - pads[1] - pads[3])
    b.note("AveragePool2d k%s s%s pads %s ceil_mode %d count_include_pad %d", k, s, pads, ceil, cip)
    b.out(b.op("AveragePool", [x], kernel_shape=k, strides=s, pads=pads, ceil_mode=ceil,
               count_include_pad=cip), "y")


RESIZE_MODES = [("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
                ("nearest", "pytorch_half_pixel", "round_prefer_ceil"), ("linear", "half_pixel", "floor"),
                ("linear", "asymmetric", "floor"), ("linear", "pytorch_half_pixel", "floor")]


def resize(b, x, mode, scales=None, sizes=None):
    m, ct, nm = mode
    ins = [x, "", scales or "", sizes] if sizes else [x, "", scales]
    return b.op("Resize", ins, mode=m, coordinate_transformation_mode=ct, nearest_mode=nm)


def t_resize_scales(b, r):
    """Resize by constant scales (output floor(H * scale)), fractions exact in binary."""
    sh, sw = pick(r, [0.25, 0.375, 0.5, 0.625, 0.75]), pick(r, [0.5, 0.75, 1.5, 2.0, 2.5])
    mode = pick(r, RESIZE_MODES)
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    b.note("Resize %s scales [1, 1, %g, %g]", mode, sh, sw)
    b.out(resize(b, x, mode, scales=b.floats([1, 1, sh, sw])), "y")


def t_resize_sizes(b, r):
    """Resize to sizes computed from the input's shape: H' = (H + a) / q, W' = W * m + c."""
    a, q = int(r.integers(0, 4)), pick(r, [2, 3, 4])
    mul, c = pick(r, [1, 2]), int(r.integers(0, 3))
    mode = pick(r, RESIZE_MODES)
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    h = b.arith("Div", b.arith("Add", b.dim1(x, 2), b.ints([a])), b.ints([q]))
    w = b.arith("Add", b.arith("Mul", b.dims_range(x, 3, 4), b.ints([mul])), b.ints([c]))
    sizes = b.op("Concat", [b.dims_range(x, 0, 2), h, w], axis=0)
    b.note("Resize %s to sizes [N, C, (H + %d) / %d, W * %d + %d]", mode, a, q, mul, c)
    b.out(resize(b, x, mode, sizes=sizes), "y")


def t_resize_max(b, r):
    """Resize (nearest) to max(T, c): equals T at the top of the range, not below c."""
    c = int(r.integers(6, 12))
    x = b.inp("x", [2, "T"], {"T": None})
    k = b.op("Max", [b.dim1(x, 2), b.ints([c])])
    sizes = b.op("Concat", [b.dims_range(x, 0, 2), k], axis=0)
    b.note("Resize nearest to sizes [N, C, max(T, %d)]", c)
    b.out(resize(b, x, ("nearest", "asymmetric", "floor"), sizes=sizes), "y")


SLICES = [(1, INT64_MAX, 2), (-4, INT64_MAX, 1), (-1, -INT64_MAX, -1), (-2, -10**9, -3), (10**9, 0, -2),
          (2, -1, 1), (0, 10**9, 3), (-10**9, 10**9, 4), (1, -2, 2)]


def t_slice(b, r):
    """Slice along a variable axis, bounds out of range or negative, steps of either sign; then one clamped
    by a constant end below the dim's maximum (min(T, K))."""
    st, en, sp = pick(r, SLICES)
    kend = int(r.integers(3, 10))
    x = b.inp("x", [3, "T"], {"T": pick(r, [None, small_max(r)])})
    y = b.op("Slice", [x, b.ints([st]), b.ints([en]), b.ints([2]), b.ints([sp])])
    b.note("Slice T[%d:%d:%d]", st, en, sp)
    b.out(y, "y")
    b.note("Slice T[:%d]", kend)
    b.out(b.op("Slice", [x, b.ints([0]), b.ints([kend]), b.ints([-1])]), "z")


def t_slice2d(b, r):
    """Slice two variable axes at once (steps of either sign), then Transpose."""
    (s0, e0, p0), (s1, e1, p1) = pick(r, SLICES), pick(r, SLICES)
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    y = b.op("Slice", [x, b.ints([s0, s1]), b.ints([e0, e1]), b.ints([2, 3]), b.ints([p0, p1])])
    b.note("Slice H[%d:%d:%d] W[%d:%d:%d], Transpose", s0, e0, p0, s1, e1, p1)
    b.out(b.op("Transpose", [y], perm=[0, 3, 1, 2]), "y")


def t_reshape_const(b, r):
    """Reshape with 0 and -1 in constant targets, then Transpose."""
    target, perm = pick(r, [([0, -1, 3], [0, 2, 1]), ([0, 0, 2, 3], [0, 2, 1, 3]), ([0, -1], None),
                            ([0, 2, -1], [0, 2, 1])])
    x = b.inp("x", ["T", 6], {"T": pick(r, [None, small_max(r)])})
    y = b.op("Reshape", [x, b.ints(target)])
    b.note("Reshape [N, T, 6] to %s, Transpose %s", target, perm)
    b.out(b.op("Transpose", [y], perm=perm) if perm else y, "y")


def t_reshape_computed(b, r):
    """Reshape to targets computed by Shape -> Gather -> Mul/Div -> Concat: [N, C * H, W], and the
    transposed input to [0, (H * W) / W, -1]."""
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    t1 = b.op("Concat", [b.dim1(x, 0), b.arith("Mul", b.dim1(x, 1), b.dim1(x, 2)), b.dim1(x, 3)], axis=0)
    y = b.op("Reshape", [x, t1])
    b.note("Reshape to Concat(N, C * H, W)")
    b.out(y, "y")
    tr = b.op("Transpose", [x], perm=[0, 2, 3, 1])
    hw = b.arith("Mul", b.dim1(x, 2), b.dim1(x, 3))
    t2 = b.op("Concat", [b.ints([0]), b.arith("Div", hw, b.dim1(x, 3)), b.ints([-1])], axis=0)
    b.note("Transpose, Reshape to Concat(0, (H * W) / W, -1)")
    b.out(b.op("Reshape", [tr, t2]), "z")


def t_reshape_pairs(b, r):
    """Reshape [N, T, 4] to [0, -1, 8]: odd T cannot be taken (the request must get a 400 naming the node).
    T is the second variable dim, its maximum even."""
    a = b.inp("a", ["S"], {"S": small_max(r)})
    tmax = 2 * int(r.integers(6, 20))
    x = b.inp("x", ["T", 4], {"T": tmax})
    b.out(b.op("Mul", [a, b.floats(2.0)]), "z")
    b.out(b.op("Reshape", [x, b.ints([0, -1, 8])], name="reshape_pairs"), "y")
    b.note("Reshape [N, T, 4] to [0, -1, 8] (node reshape_pairs); T at most %d", tmax)
    b.invalid = ({"S": 3, "T": tmax - 1}, "reshape_pairs")


def t_expand(b, r):
    """Expand [N, 1, T] to Concat(Shape(y)[0:2], Shape(x)[2]) = [N, S, T], times y, then a strided pool."""
    ceil = int(r.integers(0, 2))
    x = b.inp("x", [1, "T"], {"T": small_max(r)})
    yv = b.inp("y", ["S", 1], {"S": small_max(r)})
    shape = b.op("Concat", [b.dims_range(yv, 0, 2), b.dim1(x, 2)], axis=0)
    e = b.op("Mul", [b.op("Expand", [x, shape]), yv])
    b.note("Expand to [N, S, T], AveragePool k2 s2 ceil_mode %d", ceil)
    b.out(b.op("AveragePool", [e], kernel_shape=[2], strides=[2], ceil_mode=ceil, pads=[0, 1]), "z")


def t_range(b, r):
    """x[:, :, ::q] + Cast(Range(0, (T + q - 1) / q, 1)): ceil(T / q) both ways."""
    q = pick(r, [2, 3])
    x = b.inp("x", [2, "T"], {"T": pick(r, [None, small_max(r)])})
    n = b.arith("Div", b.arith("Add", b.dim0(x, 2), b.ints(q - 1, scalar=True)), b.ints(q, scalar=True))
    rng = b.op("Cast", [b.op("Range", [b.ints(0, scalar=True), n, b.ints(1, scalar=True)])],
               to=TensorProto.FLOAT)
    sl = b.op("Slice", [x, b.ints([0]), b.ints([INT64_MAX]), b.ints([2]), b.ints([q])])
    b.note("T[::%d] + Range(0, (T + %d) / %d)", q, q - 1, q)
    b.out(b.op("Add", [sl, rng]), "y")


def t_constant_of_shape(b, r):
    """ConstantOfShape([N, C, (T + 3) / 4]) concatenated to x on T; and alone (times 3) as a second output."""
    x = b.inp("x", [2, "T"], {"T": pick(r, [None, small_max(r)])})
    shape = b.op("Concat", [b.dims_range(x, 0, 2),
                            b.arith("Div", b.arith("Add", b.dim1(x, 2), b.ints([3])), b.ints([4]))], axis=0)
    z = b.op("ConstantOfShape", [shape], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]))
    b.note("Concat(x, ConstantOfShape([N, C, (T + 3) / 4])) on T; ConstantOfShape * 3")
    b.out(b.op("Concat", [x, z], axis=2), "y")
    b.out(b.op("Mul", [z, b.floats(3.0)]), "w")


def t_concat_pool(b, r):
    """Concat(x, MaxPool(x)) on the variable axis: T + pooled(T)."""
    k, s, ceil = pick(r, [2, 3]), pick(r, [2, 3]), int(r.integers(0, 2))
    x = b.inp("x", [2, "T"], {"T": pick(r, [None, small_max(r)])})
    p = b.op("MaxPool", [x], kernel_shape=[k], strides=[s], ceil_mode=ceil)
    b.least("T", k)
    b.note("Concat(x, MaxPool k%d s%d ceil_mode %d) on T", k, s, ceil)
    b.out(b.op("Concat", [x, p], axis=2), "y")


def t_unsqueeze_conv(b, r):
    """[N, T, C] -> Unsqueeze -> Transpose -> Conv2d k(1,3) s(1,s) -> Squeeze -> Transpose: [N, T', Co]."""
    s = pick(r, [2, 3])
    x = b.inp("x", ["T", 3], {"T": pick(r, [None, small_max(r)])})
    u = b.op("Transpose", [b.op("Unsqueeze", [x, b.ints([1])])], perm=[0, 3, 1, 2])
    c = b.op("Conv", [u, b.weight([4, 3, 1, 3], 9), b.weight([4], 1)], kernel_shape=[1, 3], strides=[1, s],
             pads=[0, 1, 0, 1])
    q = b.op("Squeeze", [c, b.ints([2])])
    b.note("Unsqueeze, Transpose, Conv2d k(1,3) s(1,%d) p1, Squeeze, Transpose", s)
    b.out(b.op("Transpose", [q], perm=[0, 2, 1]), "y")


def t_gather_arith(b, r):
    """Flatten [N, H, W] with Reshape [0, -1], keep the first (H * W) / q values (Slice end from Gather/Mul/Div)."""
    q = pick(r, [2, 3, 5])
    x = b.inp("x", ["H", "W"], {"H": small_max(r), "W": small_max(r)})
    f = b.op("Reshape", [x, b.ints([0, -1])])
    e = b.arith("Div", b.arith("Mul", b.dim1(x, 1), b.dim1(x, 2)), b.ints([q]))
    b.note("Reshape [0, -1], Slice [:(H * W) / %d]", q)
    b.out(b.op("Slice", [f, b.ints([0]), e, b.ints([1])]), "y")


def t_shared_var(b, r):
    """Two inputs sharing T: MatMul + mask, then AveragePool over T (stride 3, ceil_mode drawn)."""
    ceil = int(r.integers(0, 2))
    x = b.inp("x", ["T", 4], {"T": small_max(r)})
    m = b.inp("m", ["T"], {"T": small_max(r)})
    h = b.op("Add", [b.op("MatMul", [x, b.weight([4, 5], 4)]), b.op("Unsqueeze", [m, b.ints([2])])])
    t = b.op("Transpose", [h], perm=[0, 2, 1])
    b.note("MatMul + mask on a shared T, AveragePool k3 s3 ceil_mode %d", ceil)
    b.out(b.op("AveragePool", [t], kernel_shape=[3], strides=[3], ceil_mode=ceil, pads=[1, 1]), "y")


def t_encoder_like(b, r):
    """Conv1d k3 s1 p1, Relu, Conv1d k3 s2 p1, Transpose, MatMul: [N, ceil(T / 2), d]."""
    x = b.inp("x", [4, "T"], {"T": pick(r, [None, 2 * int(r.integers(8, 24))])})
    c1 = b.op("Relu", [b.op("Conv", [x, b.weight([6, 4, 3], 12), b.weight([6], 1)], kernel_shape=[3],
                               pads=[1, 1])])
    c2 = b.op("Relu", [b.op("Conv", [c1, b.weight([6, 6, 3], 18), b.weight([6], 1)], kernel_shape=[3],
                               strides=[2], pads=[1, 1])])
    b.note("Conv1d k3 s1 p1, Conv1d k3 s2 p1, Transpose, MatMul")
    b.out(b.op("MatMul", [b.op("Transpose", [c2], perm=[0, 2, 1]), b.weight([6, 5], 6)]), "y")


def t_pool_resize_back(b, r):
    """MaxPool 2-D (ceil_mode 1), then Resize back to the input's H, W (sizes = Shape(x)[2:4]), plus x."""
    x = b.inp("x", [2, "H", "W"], {"H": small_max(r), "W": small_max(r)})
    p = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    sizes = b.op("Concat", [b.dims_range(p, 0, 2), b.dims_range(x, 2, 4)], axis=0)
    b.least("H", 2)
    b.least("W", 2)
    b.note("MaxPool 2x2 s2 ceil_mode 1, Resize nearest back to Shape(x)[2:4], + x; the pooled map out too")
    b.out(b.op("Add", [resize(b, p, ("nearest", "asymmetric", "floor"), sizes=sizes), x]), "y")
    b.out(p, "p")


TEMPLATES = [t_conv1d, t_conv1d, t_conv2d, t_maxpool, t_avgpool2d, t_resize_scales, t_resize_sizes,
             t_resize_max, t_slice, t_slice2d, t_reshape_const, t_reshape_computed, t_reshape_pairs, t_expand,
             t_range, t_constant_of_shape, t_concat_pool, t_unsqueeze_conv, t_gather_arith, t_shared_var,
             t_encoder_like, t_pool_resize_back]


def build_all(seed):
    """[(name, Builder)] for every template, each from its own stream of the seed."""
    out = []
    for i, t in enumerate(TEMPLATES):
        b = Builder(np.random.default_rng([seed, i]))
        t(b, b.rng)
        out.append(("fz%02d_%s" % (i, t.__name__[2:]), b))
    return out


def model_json(b):
    spec = {"platform": "onnx", "max_batch_size": MAX_BATCH,
            "dynamic_batching": {"max_queue_delay_us": 2000}}
    md = {}
    for name, dims in b.inputs:
        if any(isinstance(d, str) and b.vars[d] is not None for d in dims[1:]):
            md[name] = [d if isinstance(d, int) else (b.vars[d] or DEFAULT_MAX) for d in dims[1:]]
    if md:
        spec["max_dims"] = md
    return spec


def cmd_make(d):
    seed = seed_from_env()
    print("shape_fuzz: seed %d (SHAPE_FUZZ_SEED changes it)" % seed)
    os.makedirs(d, exist_ok=True)
    manifest = {"seed": seed, "models": []}
    for name, b in build_all(seed):
        md = os.path.join(d, name)
        os.makedirs(md, exist_ok=True)
        onnx.save(b.model(), os.path.join(md, "model.onnx"))
        with open(os.path.join(md, "model.json"), "w") as f:
            json.dump(model_json(b), f)
        manifest["models"].append({
            "name": name, "notes": b.notes, "inputs": b.inputs, "outputs": b.outputs,
            "vars": {k: (v or DEFAULT_MAX) for k, v in b.vars.items()}, "mins": b.mins,
            "invalid": b.invalid})
    with open(os.path.join(d, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    print("shape_fuzz: %d models in %s" % (len(manifest["models"]), d))


# ---------------------------------------------------------------- checking


class Model:
    """One generated model: its onnxruntime session, node names, variable dims and inputs."""

    def __init__(self, d, spec):
        self.__dict__.update(spec)
        path = os.path.join(d, self.name, "model.onnx")
        self.node_names = [n.name for n in onnx.load(path).graph.node]
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 4
        self.sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.out_names = [o.name for o in self.sess.get_outputs()]

    def label(self):
        return "%s (%s)" % (self.name, "; ".join(self.notes))

    def input_shapes(self, rows, vals):
        return {n: [rows] + [vals[x] if isinstance(x, str) else x for x in dims[1:]] for n, dims in self.inputs}

    def make_inputs(self, rows, vals, rng):
        return {n: rng.standard_normal(s).astype(np.float32) for n, s in self.input_shapes(rows, vals).items()}

    def reference(self, feeds):
        """onnxruntime's outputs by name, or None when it refuses the shape."""
        try:
            res = self.sess.run(None, feeds)
        except Exception:   # noqa: BLE001 (onnxruntime raises its own exception classes)
            return None
        return dict(zip(self.out_names, res))

    def below_min(self, vals):
        return any(vals[v] < self.mins.get(v, 1) for v in vals)

    def names_node(self, msg):
        return any(n in msg for n in self.node_names)


def shape_of(m, vals, rows=1):
    """onnxruntime's output shapes at vals: {name: shape}, None when refused, 'empty' for a zero-sized output."""
    ref = m.reference(m.make_inputs(rows, vals, np.random.default_rng(0)))
    if ref is None:
        return None
    if any(a.size == 0 for a in ref.values()):
        return "empty"
    return {k: list(v.shape) for k, v in ref.items()}


def sweep_values(vmax, rng):
    """Values of a variable dim for the metadata sweep: the bottom, the top and a random middle."""
    vals = set(range(1, min(vmax, 40) + 1)) | set(range(max(1, vmax - 8), vmax + 1))
    vals |= set(int(v) for v in rng.integers(1, vmax + 1, size=24))
    return sorted(vals)


def expected_metadata(m, rng):
    """Each output's metadata shape: per dim the value it has at every shape of a sweep of each variable dim
    (the others at their maximum, then at random), or -1 when it takes more than one."""
    seen = {o: None for o in m.out_names}
    names = sorted(m.vars)
    bases = [{v: m.vars[v] for v in names}]
    bases += [{v: int(rng.integers(m.mins.get(v, 1), m.vars[v] + 1)) for v in names} for _ in range(3)]
    for base in bases:
        for v in names:
            for val in sweep_values(m.vars[v], rng):
                s = shape_of(m, dict(base, **{v: val}))
                if not isinstance(s, dict):
                    continue
                for o, shp in s.items():
                    if seen[o] is None:
                        seen[o] = list(shp)
                    elif len(seen[o]) == len(shp):
                        seen[o] = [a if a == c else -1 for a, c in zip(seen[o], shp)]
    return {o: ([-1] + s[1:] if s else None) for o, s in seen.items()}


def as_outputs(res, m):
    """The shm client's answer as {name: (datatype, shape, flat FP32 values)}."""
    if isinstance(res, np.ndarray):
        res = {m.out_names[0]: res}
    return {n: ("FP32" if a.dtype == np.float32 else str(a.dtype), list(a.shape),
                np.array(a, dtype=np.float32).flatten()) for n, a in res.items()}


class Checker:
    def __init__(self, url, shm=None, shm_errors=None):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.shm, self.shm_errors = shm, shm_errors
        self.transports = ["json", "binary"] + (["shm"] if shm is not None else [])
        self.failures = 0
        self.lock = threading.Lock()
        self.printed = {}

    def fail(self, m, msg):
        with self.lock:
            self.failures += 1
            n = self.printed.get(m.name, 0)
            self.printed[m.name] = n + 1
            if n < 4:
                print("FAIL: %s: %s" % (m.label(), msg))
            elif n == 4:
                print("FAIL: %s: further failures of this model not shown" % m.name)

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def infer_json(self, m, feeds, ref):
        body = {"inputs": [{"name": n, "datatype": "FP32", "shape": list(a.shape), "data": a.flatten().tolist()}
                           for n, a in feeds.items()]}
        st, _, raw = self.request("POST", "/v2/models/%s/infer" % m.name, json.dumps(body).encode(),
                                  {"Content-Type": "application/json"})
        if st != 200:
            return st, raw.decode(errors="replace")
        out = {}
        for o in json.loads(raw)["outputs"]:
            out[o["name"]] = (o["datatype"], o["shape"], np.array(o["data"], dtype=np.float32).flatten())
        return st, out

    def infer_binary(self, m, feeds, ref):
        hdr = {"inputs": [{"name": n, "datatype": "FP32", "shape": list(a.shape),
                           "parameters": {"binary_data_size": a.nbytes}} for n, a in feeds.items()],
               "outputs": [{"name": n, "parameters": {"binary_data": True}} for n in m.out_names]}
        h = json.dumps(hdr).encode()
        body = h + b"".join(a.astype("<f4").tobytes() for a in feeds.values())
        st, headers, raw = self.request("POST", "/v2/models/%s/infer" % m.name, body,
                                        {"Inference-Header-Content-Length": str(len(h)),
                                         "Content-Type": "application/octet-stream"})
        if st != 200:
            return st, raw.decode(errors="replace")
        n = int(headers.get("inference-header-content-length", len(raw)))
        meta, off, out = json.loads(raw[:n]), n, {}
        for o in meta["outputs"]:
            size = o.get("parameters", {}).get("binary_data_size")
            if size is None:
                out[o["name"]] = (o["datatype"], o["shape"], np.array(o.get("data", []), dtype=np.float32))
                continue
            out[o["name"]] = (o["datatype"], o["shape"], np.frombuffer(raw[off:off + size], dtype="<f4"))
            off += size
        if off != len(raw):
            out["(framing)"] = (None, None, "%d bytes after the last output" % (len(raw) - off))
        return st, out

    def infer_shm(self, m, feeds, ref):
        """Over shared memory with the Python client; outputs it cannot size from the metadata (dims that
        follow no input) are given as out= arrays of onnxruntime's shapes."""
        err = self.shm_errors
        try:
            try:
                res = self.shm.infer(m.name, feeds)
            except err.InvalidRequest as e:
                if "pass out=" not in str(e) or ref is None:
                    raise
                res = self.shm.infer(m.name, feeds, out={n: np.empty(a.shape, np.float32) for n, a in ref.items()})
        except err.InvalidRequest as e:
            return 400, "InvalidRequest: %s" % e
        except err.InferdError as e:
            return 500, "%s: %s" % (type(e).__name__, e)
        return 200, as_outputs(res, m)

    def compare(self, m, what, got, ref):
        """got {name: (dtype, shape, flat values)} against onnxruntime's {name: array}."""
        if "(framing)" in got:
            self.fail(m, "%s: binary answer: %s" % (what, got.pop("(framing)")[2]))
        if sorted(got) != sorted(ref):
            self.fail(m, "%s: outputs %s, expected %s" % (what, sorted(got), sorted(ref)))
            return
        for name, want in ref.items():
            dt, shape, data = got[name]
            if dt != "FP32" or list(shape) != list(want.shape):
                self.fail(m, "%s: output %s is %s %s, onnxruntime's %s (%d values sent, %d expected)" % (
                    what, name, dt, shape, list(want.shape), data.size, want.size))
                continue
            if data.size != want.size:
                self.fail(m, "%s: output %s carries %d values for shape %s" % (what, name, data.size, shape))
                continue
            w = want.astype(np.float64).flatten()
            g = data.astype(np.float64)
            tol = 1e-4 * max(1.0, float(np.max(np.abs(w)))) + 1e-4 * np.abs(w)
            bad = np.flatnonzero(~(np.abs(g - w) <= tol))
            if bad.size:
                i = int(bad[0])
                self.fail(m, "%s: output %s %s: %d of %d values differ, first at flat %d: %r, onnxruntime %r" % (
                    what, name, list(want.shape), bad.size, w.size, i, g[i], w[i]))

    def one(self, m, rows, vals, seed, transport):
        """One request of rows rows at dims vals, checked against onnxruntime: its answer, or a 400 naming a
        node where onnxruntime refuses the shape (or, below a window's size, where the daemon does)."""
        feeds = m.make_inputs(rows, vals, np.random.default_rng(seed))
        ref = m.reference(feeds)
        if ref is None and transport == "shm":
            transport = "json"
        what = "%s request %s" % (transport, m.input_shapes(rows, vals))
        st, got = getattr(self, "infer_" + transport)(m, feeds, ref)
        # The shm wire carries an error's code, not its text: there a refusal is InvalidRequest alone.
        refused_ok = st == 400 and (transport == "shm" or m.names_node(str(got)))
        if ref is None:
            if not refused_ok:
                self.fail(m, "%s: onnxruntime refuses this shape; the daemon answered %d %s (want 400 naming "
                          "the node)" % (what, st, str(got)[:300]))
        elif m.below_min(vals) and refused_ok:
            pass
        elif st != 200:
            self.fail(m, "%s: status %d %s%s" % (what, st, str(got)[:300], " (a window does not fit this shape: "
                      "the answer or a 400 naming the node)" if m.below_min(vals) else ""))
        else:
            self.compare(m, what, got, ref)

    def check_ready(self, m):
        st, _, raw = self.request("GET", "/v2/models/%s/ready" % m.name)
        if st == 200:
            return True
        _, _, idx = self.request("POST", "/v2/repository/index", b"{}")
        reason = ""
        try:
            for e in json.loads(idx):
                if e.get("name") == m.name:
                    reason = e.get("reason", "")
        except ValueError:
            pass
        self.fail(m, "not ready (HTTP %d): %s" % (st, reason or raw[:300]))
        return False

    def check_metadata(self, m, want_out):
        st, _, raw = self.request("GET", "/v2/models/%s" % m.name)
        if st != 200:
            self.fail(m, "metadata: HTTP %d %s" % (st, raw[:200]))
            return
        meta = json.loads(raw)
        ins = {i["name"]: i["shape"] for i in meta.get("inputs", [])}
        for n, dims in m.inputs:
            want = [-1] + [-1 if isinstance(x, str) else x for x in dims[1:]]
            if ins.get(n) != want:
                self.fail(m, "metadata: input %s is %s, expected %s" % (n, ins.get(n), want))
        outs = {o["name"]: o["shape"] for o in meta.get("outputs", [])}
        for n, want in want_out.items():
            if want is not None and outs.get(n) != want:
                self.fail(m, "metadata: output %s is %s; onnxruntime's sweep of the variable dims gives %s" % (
                    n, outs.get(n), want))


def sample_vals(m, rng):
    """A random value for every variable dim: a third small, a fifth near the top, the rest anywhere."""
    vals = {}
    for v, vmax in sorted(m.vars.items()):
        u = rng.random()
        if u < 0.33:
            x = rng.integers(1, min(8, vmax) + 1)
        elif u < 0.53:
            x = rng.integers(max(1, vmax - 3), vmax + 1)
        else:
            x = rng.integers(1, vmax + 1)
        vals[v] = int(x)
    return vals


def plan_requests(m, rng):
    """29 (rows, vals) at shapes onnxruntime takes with non-empty outputs (the largest first, each different
    from the one before), and up to 2 each of shapes it refuses and shapes a window does not fit."""
    good, odd = [], []
    top = dict(m.vars)
    if isinstance(shape_of(m, top), dict):
        good.append((MAX_BATCH, top))
    counts = {"refused": 0, "small": 0}
    for _ in range(3000):
        if len(good) >= 29:
            break
        vals = sample_vals(m, rng)
        s = shape_of(m, vals)
        kind = "refused" if s is None else "small" if m.below_min(vals) else None
        if kind:
            if counts[kind] < 2 and all(vals != o[1] for o in odd):
                counts[kind] += 1
                odd.append((1, vals))
            continue
        if s == "empty" or (good and good[-1][1] == vals):
            continue
        good.append((int(rng.integers(1, MAX_BATCH + 1)), vals))
    return good, odd


def run_concurrent(ck, m, batch, seed0):
    threads = [threading.Thread(target=ck.one, args=(m, rows, vals, seed0 + i,
                                                     ck.transports[i % len(ck.transports)]))
               for i, (rows, vals) in enumerate(batch)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def check_model(ck, m, rng):
    """Readiness, metadata, then the requests of plan_requests; returns how many were sent."""
    if not ck.check_ready(m):
        return 0
    ck.check_metadata(m, expected_metadata(m, rng))
    good, odd = plan_requests(m, rng)
    if len(good) < 25:
        ck.fail(m, "only %d shapes onnxruntime takes were found" % len(good))
        return 0
    tr = ck.transports
    seq, conc = good[:9], good[9:25]
    # Sequential: the largest shape first, then a different shape each time.
    for i, (rows, vals) in enumerate(seq):
        ck.one(m, rows, vals, 1000 + i, tr[i % len(tr)])
    # Concurrent, different shapes (each batch context sees several).
    run_concurrent(ck, m, conc[:8], 2000)
    # Concurrent, pairs of equal shapes (rows batch together), the transports mixed in one batch.
    pairs = [c for c in conc[8:12] for _ in range(2)]
    run_concurrent(ck, m, pairs, 3000)
    # A large request then a small one, twice: nothing of the first may show in the second.
    big = max(good, key=lambda g: sum(g[1].values()))[1]
    small = min(good, key=lambda g: sum(g[1].values()))[1]
    for i, (rows, vals) in enumerate([(MAX_BATCH, big), (1, small), (MAX_BATCH, big), (1, small)]):
        ck.one(m, rows, vals, 4000 + i, tr[(i // 2) % len(tr)])
    for i, (rows, vals) in enumerate(odd):
        ck.one(m, rows, vals, 5000 + i, tr[i % len(tr)])
    sent = len(seq) + 8 + len(pairs) + 4 + len(odd)
    if m.invalid:
        vals, node = m.invalid
        feeds = m.make_inputs(1, vals, np.random.default_rng(6000))
        for transport in ("json", "binary"):
            st, got = getattr(ck, "infer_" + transport)(m, feeds, None)
            sent += 1
            if st != 400 or node not in str(got):
                ck.fail(m, "%s request %s the graph cannot take: HTTP %d %s (want 400 naming node %r)" % (
                    transport, m.input_shapes(1, vals), st, str(got)[:300], node))
    return sent


def connect_shm(socket):
    """The Python client (client/python on PYTHONPATH, INFERD_LIB naming libinferd) connected to socket."""
    import inferd
    from inferd import errors
    return inferd.connect(socket), errors


def cmd_check(url, d, socket=None):
    with open(os.path.join(d, MANIFEST)) as f:
        manifest = json.load(f)
    seed = manifest["seed"]
    print("shape_fuzz: seed %d (SHAPE_FUZZ_SEED changes it)" % seed)
    only = os.environ.get("SHAPE_FUZZ_ONLY")
    shm, errors = connect_shm(socket) if socket else (None, None)
    ck = Checker(url, shm, errors)
    total = 0
    try:
        for i, spec in enumerate(manifest["models"]):
            if only and only not in spec["name"]:
                continue
            m = Model(d, spec)
            before = ck.failures
            n = check_model(ck, m, np.random.default_rng([seed, 1000 + i]))
            total += n
            print("%s: %s, %d requests: %s" % ("ok" if ck.failures == before else "FAILED", m.name, n,
                                                "; ".join(m.notes)))
    finally:
        if shm is not None:
            shm.close()
    print("shape_fuzz: %d models, %d requests over %s, %d failure(s), seed %d" % (
        len(manifest["models"]), total, ", ".join(ck.transports), ck.failures, seed))
    return 1 if ck.failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        cmd_make(sys.argv[2])
        return 0
    if len(sys.argv) in (4, 5) and sys.argv[1] == "check":
        return cmd_check(*sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
