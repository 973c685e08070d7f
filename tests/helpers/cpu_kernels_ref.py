#!/usr/bin/python3
"""cpu_kernels_ref.py: random one-node ONNX models run by onnxruntime, written out for test_cpu_kernels_ort.

Usage: cpu_kernels_ref.py OUTDIR [SEED]

For each case it builds a one-node model with onnx.helper, runs it in onnxruntime
and writes every input and output as raw little-endian bytes, plus OUTDIR/cases.json
describing the node in the graph's own terms (op, attributes, dtypes, shapes) so
the C side can build the same node by hand.  Exits 77 when onnx or onnxruntime
cannot be imported.
"""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    import onnxruntime as ort
except ImportError as e:  # the test is skipped, not failed
    print(f"SKIP: {e}")
    sys.exit(77)

OPSET = 19
DT = {"float32": ("FP32", TensorProto.FLOAT), "float16": ("FP16", TensorProto.FLOAT16),
      "int64": ("INT64", TensorProto.INT64), "int32": ("INT32", TensorProto.INT32),
      "bool": ("BOOL", TensorProto.BOOL)}
COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


class Writer:
    """Collects cases and their tensors."""

    def __init__(self, outdir, rng):
        self.outdir, self.rng, self.cases = outdir, rng, []

    def tensor(self, arr, tag):
        """Write one array; return its description."""
        name = f"c{len(self.cases)}_{tag}.bin"
        arr = np.ascontiguousarray(arr)
        with open(os.path.join(self.outdir, name), "wb") as f:
            f.write(arr.tobytes())
        return {"file": name, "dtype": DT[arr.dtype.name][0], "shape": list(arr.shape)}

    def case(self, label, onnx_op, onnx_attrs, inputs, graph_op, graph_attrs, consts=None, act=0,
             graph_inputs=None, out_type=None):
        """Run one node in onnxruntime and record it; inputs is a list of arrays (None = omitted)."""
        consts = consts or {}
        names, vinfo, feeds, inits = [], [], {}, []
        for i, a in enumerate(inputs):
            if a is None:
                names.append("")
                continue
            n = f"in{i}"
            names.append(n)
            if i in consts:
                inits.append(helper.make_tensor(n, DT[a.dtype.name][1], a.shape, a.flatten().tolist()))
            else:
                vinfo.append(helper.make_tensor_value_info(n, DT[a.dtype.name][1], a.shape))
                feeds[n] = a
        node = helper.make_node(onnx_op, names, ["out0"], **onnx_attrs)
        otype = out_type if out_type is not None else DT[inputs[0].dtype.name][1]
        graph = helper.make_graph([node], label, vinfo, [helper.make_tensor_value_info("out0", otype, None)],
                                  initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 9
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        out = sess.run(None, feeds)[0]
        gin = graph_inputs if graph_inputs is not None else inputs
        desc = {"name": label, "op": graph_op, "attrs": graph_attrs, "act": act,
                "inputs": [None if a is None else self.tensor(a, f"in{i}") for i, a in enumerate(gin)],
                "outputs": [self.tensor(out, "out0")]}
        self.cases.append(desc)


def rnd(rng, *shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def window(rng, ns, pool=False):
    k = [int(rng.integers(1, 4)) for _ in range(ns)]
    s = [int(rng.integers(1, 4)) for _ in range(ns)]
    d = [int(rng.integers(1, 3)) for _ in range(ns)]
    lim = [(kk // 2 if pool else kk - 1) for kk in k]
    pb = [int(rng.integers(0, l + 1)) for l in lim]
    pe = [int(rng.integers(0, l + 1)) for l in lim]
    return k, s, d, pb, pe


def gwin(ns, k, s, d, pb, pe, group=1, op=None):
    return {"nspatial": ns, "kernel": k, "stride": s, "dilation": d, "pad_begin": pb, "pad_end": pe,
            "group": group, "output_padding": op or [0] * ns}


def conv_cases(w, rng, n):
    for t in range(n):
        ns = int(rng.integers(1, 4))
        k, s, d, pb, pe = window(rng, ns)
        group = [1, 2, 3][t % 3]
        cg, mg = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        if t % 5 == 4:  # depthwise
            cg = 1
        spatial = [(kk - 1) * dd + 1 + int(rng.integers(0, 4 if ns == 3 else 8)) for kk, dd in zip(k, d)]
        x = rnd(rng, int(rng.integers(1, 3)), cg * group, *spatial)
        wt = rnd(rng, mg * group, cg, *k)
        b = rnd(rng, mg * group) if t % 2 else None
        ins = [x, wt] + ([b] if b is not None else [])
        w.case(f"conv{t}", "Conv", {"kernel_shape": k, "strides": s, "dilations": d, "pads": pb + pe,
                                     "group": group}, ins, "CONV", gwin(ns, k, s, d, pb, pe, group))


def conv_transpose_cases(w, rng, n):
    for t in range(n):
        ns = int(rng.integers(1, 3))
        k, s, d, pb, pe = window(rng, ns)
        op = [int(rng.integers(0, ss)) for ss in s]
        group = [1, 2][t % 2]
        cg, mg = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        spatial = [int(rng.integers(2, 6)) for _ in range(ns)]
        for i in range(ns):  # keep every output dim positive
            if s[i] * (spatial[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - pb[i] - pe[i] <= 0:
                pb[i] = pe[i] = 0
        x = rnd(rng, int(rng.integers(1, 3)), cg * group, *spatial)
        wt = rnd(rng, cg * group, mg, *k)
        b = rnd(rng, mg * group) if t % 2 else None
        ins = [x, wt] + ([b] if b is not None else [])
        w.case(f"convt{t}", "ConvTranspose", {"kernel_shape": k, "strides": s, "dilations": d, "pads": pb + pe,
                                               "group": group, "output_padding": op},
               ins, "CONV_TRANSPOSE", gwin(ns, k, s, d, pb, pe, group, op))


def pool_cases(w, rng, n):
    for t in range(n):
        ns = int(rng.integers(1, 4))
        kind = t % 2  # 0 max, 1 average
        glob = t % 7 == 6
        k, s, d, pb, pe = window(rng, ns, pool=True)
        if kind == 1:
            d = [1] * ns
        spatial = [(kk - 1) * dd + 1 + int(rng.integers(0, 4 if ns == 3 else 8)) for kk, dd in zip(k, d)]
        x = rnd(rng, int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
        if glob:
            w.case(f"gpool{t}", ["GlobalMaxPool", "GlobalAveragePool"][kind], {}, [x], "POOL",
                   {"kind": kind, "global": 1})
            continue
        ceil, cip = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        attrs = {"kernel_shape": k, "strides": s, "pads": pb + pe, "ceil_mode": ceil}
        if kind == 0:
            attrs["dilations"] = d
        else:
            attrs["count_include_pad"] = cip
        g = gwin(ns, k, s, d, pb, pe)
        g.update({"kind": kind, "global": 0, "ceil_mode": ceil, "count_include_pad": cip if kind else 0})
        w.case(f"pool{t}", ["MaxPool", "AveragePool"][kind], attrs, [x], "POOL", g)


def resize_cases(w, rng, n):
    for t in range(n):
        mode = ["nearest", "linear"][t % 2]
        coord = int(rng.integers(0, len(COORDS)))
        near = int(rng.integers(0, len(NEAREST)))
        x = rnd(rng, int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 8)), int(rng.integers(1, 8)))
        attrs = {"mode": mode, "coordinate_transformation_mode": COORDS[coord], "nearest_mode": NEAREST[near]}
        g = {"mode": t % 2, "coord": coord, "nearest": near}
        if t % 3 == 0:
            sizes = np.array([x.shape[0], x.shape[1], int(rng.integers(1, 13)), int(rng.integers(1, 13))], np.int64)
            g["sizes"] = sizes.tolist()
            ins, consts = [x, None, None, sizes], {3: True}
        else:
            sc = np.array([1, 1] + [float(rng.choice([0.5, 0.75, 1.5, 2.0, 2.5, 3.0])) for _ in range(2)], np.float32)
            if any(int(np.floor(x.shape[i] * sc[i])) < 1 for i in range(4)):
                sc[2:] = 2.0
            g["scales"] = sc.tolist()
            ins, consts = [x, None, sc], {2: True}
        w.case(f"resize{t}", "Resize", attrs, ins, "RESIZE", g, consts=consts, graph_inputs=[x])


def softmax_ln_cases(w, rng, n):
    for t in range(n):
        shape = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 5)))]
        ax = int(rng.integers(-len(shape), len(shape)))
        x = (rnd(rng, *shape) * 4).astype(np.float32)
        log = t % 2
        w.case(f"softmax{t}", ["Softmax", "LogSoftmax"][log], {"axis": ax}, [x], "SOFTMAX",
               {"axis": ax, "log": log})
        tail = shape[ax % len(shape):]
        sc, b = rnd(rng, *tail), rnd(rng, *tail)
        ins = [x, sc] + ([b] if t % 2 else [])
        w.case(f"layernorm{t}", "LayerNormalization", {"axis": ax, "epsilon": 1e-5}, ins, "LAYERNORM",
               {"axis": ax, "eps": 1e-5})


def gather_slice_cases(w, rng, n):
    for t in range(n):
        shape = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 5)))]
        ax = int(rng.integers(-len(shape), len(shape)))
        dt = [np.float32, np.int64][t % 2]
        x = (rng.integers(-100, 100, size=shape)).astype(dt)
        dim = shape[ax]
        ishape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
        idx = rng.integers(-dim, dim, size=ishape).astype([np.int64, np.int32][t % 3 == 0])
        w.case(f"gather{t}", "Gather", {"axis": ax}, [x, idx], "GATHER", {"axis": ax})
        axes = sorted(set(int(a) for a in rng.integers(0, len(shape), size=int(rng.integers(1, len(shape) + 1)))))
        starts = [int(rng.integers(-8, 8)) for _ in axes]
        ends = [int(rng.choice([rng.integers(-8, 8), 2**62, -2**62])) for _ in axes]
        steps = [int(rng.integers(1, 4)) * int(rng.choice([1, -1])) for _ in axes]
        arrs = [np.array(v, np.int64) for v in (starts, ends, axes, steps)]
        w.case(f"slice{t}", "Slice", {}, [x] + arrs, "SLICE",
               {"starts": starts, "ends": ends, "axes": axes, "steps": steps},
               consts={1: True, 2: True, 3: True, 4: True}, graph_inputs=[x])


def misc_cases(w, rng, n):
    for t in range(n):
        m, k, nn = (int(rng.integers(1, 30)) for _ in range(3))
        ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        a = rnd(rng, *([k, m] if ta else [m, k]))
        b = rnd(rng, *([nn, k] if tb else [k, nn]))
        c = rnd(rng, nn)
        w.case(f"gemm{t}", "Gemm", {"transA": ta, "transB": tb, "alpha": 0.5, "beta": 1.5}, [a, b, c], "GEMM",
               {"trans_a": ta, "trans_b": tb, "alpha": 0.5, "beta": 1.5})
        a = rnd(rng, 2, 1, m, k)
        b = rnd(rng, 3, k, nn)
        w.case(f"matmul{t}", "MatMul", {}, [a, b], "MATMUL", {})
        shape = [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 4)))]
        x = rnd(rng, *shape)
        mode = t % 3
        pads = [int(rng.integers(0, d)) for d in shape] + [int(rng.integers(0, d)) for d in shape]
        w.case(f"pad{t}", "Pad", {"mode": ["constant", "reflect", "edge"][mode]},
               [x, np.array(pads, np.int64), np.array(0.25, np.float32)], "PAD",
               {"mode": mode, "pads": pads, "value": 0.25}, consts={1: True, 2: True}, graph_inputs=[x])
        axes = sorted(set(int(a) for a in rng.integers(0, len(shape), size=2)))
        keep = t % 2
        kind = t % 3
        w.case(f"reduce{t}", ["ReduceMean", "ReduceSum", "ReduceMax"][kind], {"keepdims": keep},
               [x, np.array(axes, np.int64)], "REDUCE", {"kind": kind, "axes": axes, "keepdims": keep},
               consts={1: True}, graph_inputs=[x])
        w.case(f"cast{t}", "Cast", {"to": TensorProto.FLOAT16}, [(x * 1000).astype(np.float32)], "CAST", {"to": 1},
               out_type=TensorProto.FLOAT16)


UNARY = [("Relu", 1, {}), ("Sigmoid", 4, {}), ("Tanh", 5, {}), ("LeakyRelu", 6, {"alpha": 0.1}),
         ("HardSigmoid", 8, {"alpha": 0.2, "beta": 0.5}), ("HardSwish", 9, {}), ("Exp", 10, {}),
         ("Log", 11, {}), ("Sqrt", 12, {}), ("Neg", 13, {}), ("Reciprocal", 14, {}), ("Erf", 15, {}), ("Abs", 16, {})]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Equal", "Max", "Min"]
# The comparisons, by their graph_binary number (output BOOL).
COMPARE = {"Equal": 5, "Greater": 8, "Less": 9, "GreaterOrEqual": 10, "LessOrEqual": 11}
LOGICAL = {"And": 12, "Or": 13}


def elementwise_cases(w, rng, n):
    for t, (op, fn, attrs) in enumerate(UNARY):
        x = rng.uniform(0.1 if op in ("Log", "Sqrt", "Reciprocal") else -3, 3, size=(3, 4, 5)).astype(np.float32)
        w.case(f"unary_{op}", op, attrs, [x], "UNARY", {"fn": fn, "alpha": attrs.get("alpha", 0.0),
                                                          "beta": attrs.get("beta", 0.0)})
    for t in range(n):
        fn = t % len(BINARY)
        shape = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 5)))]
        bshape = [d if rng.integers(0, 3) else 1 for d in shape[int(rng.integers(0, len(shape) + 1)):]]
        dt = np.int64 if BINARY[fn] == "Equal" and t % 2 else np.float32
        a = rng.uniform(0.2 if BINARY[fn] == "Pow" else -2, 2, size=shape).astype(dt)
        b = rng.uniform(0.5, 2, size=bshape).astype(dt) if BINARY[fn] == "Div" else \
            rng.uniform(-2, 2, size=bshape).astype(dt)
        if BINARY[fn] == "Equal":  # few distinct values, so equal pairs occur
            a = rng.integers(-2, 3, size=shape).astype(dt)
            b = rng.integers(-2, 3, size=bshape).astype(dt)
        w.case(f"binary{t}_{BINARY[fn]}", BINARY[fn], {}, [a, b], "BINARY", {"fn": fn},
               out_type=TensorProto.BOOL if BINARY[fn] == "Equal" else None)
        x = rnd(rng, 2, 3, 4, 5)
        slope = rnd(rng, 3, 1, 1)
        w.case(f"prelu{t}", "PRelu", {}, [x, slope], "PRELU", {})
        cond = rng.integers(0, 2, size=shape[-2:]).astype(np.bool_)
        y = rng.integers(-9, 9, size=shape).astype(np.int64)
        z = rng.integers(-9, 9, size=bshape).astype(np.int64)
        w.case(f"where{t}", "Where", {}, [cond, y, z], "WHERE", {}, out_type=TensorProto.INT64)
        perm = [int(i) for i in rng.permutation(len(shape))]
        w.case(f"transpose{t}", "Transpose", {"perm": perm}, [y], "TRANSPOSE", {"perm": perm})
        tgt = np.array(shape, np.int64)
        w.case(f"expand{t}", "Expand", {}, [z, tgt], "EXPAND", {}, consts={1: True}, graph_inputs=[z])
        ax = int(rng.integers(0, len(shape)))
        parts = [rnd(rng, *(shape[:ax] + [int(rng.integers(1, 4))] + shape[ax + 1:])) for _ in range(int(rng.integers(1, 4)))]
        w.case(f"concat{t}", "Concat", {"axis": ax}, parts, "CONCAT", {"axis": ax})
        x = rnd(rng, 2, 3, 4, 4)
        p = [rnd(rng, 3), rnd(rng, 3), rnd(rng, 3), rng.uniform(0.1, 1, size=3).astype(np.float32)]
        w.case(f"batchnorm{t}", "BatchNormalization", {"epsilon": 1e-3}, [x] + p, "BATCHNORM", {"eps": 1e-3})
    for fn in range(4):  # a broadcast first operand: a squeeze-excitation block's per-channel scale * x
        a = rng.uniform(-2, 2, size=(2, 5, 1, 1)).astype(np.float32)
        b = rng.uniform(0.5, 2, size=(2, 5, 7, 9)).astype(np.float32)
        w.case(f"binary_bcast_first_{BINARY[fn]}", BINARY[fn], {}, [a, b], "BINARY", {"fn": fn})


def compare_cases(w, rng, n):
    """Comparisons with broadcasting (either side), FP32 (NaN included) and INT64/INT32, few distinct values."""
    for t in range(n):
        op = list(COMPARE)[t % len(COMPARE)]
        shape = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 5)))]
        bshape = [d if rng.integers(0, 3) else 1 for d in shape[int(rng.integers(0, len(shape) + 1)):]]
        dt = [np.float32, np.int64, np.int32][t % 3]
        a = rng.integers(-2, 3, size=shape).astype(dt)
        b = rng.integers(-2, 3, size=bshape).astype(dt)
        if dt == np.float32:
            a = a + rng.choice([0, 0.5], size=shape).astype(dt)
            if a.size > 1:
                a.flat[int(rng.integers(0, a.size))] = np.nan
        if t % 2:
            a, b = b, a
        w.case(f"compare{t}_{op}_{np.dtype(dt).name}", op, {}, [a, b], "BINARY", {"fn": COMPARE[op]},
               out_type=TensorProto.BOOL)
        op = list(LOGICAL)[t % 2]
        a = rng.integers(0, 2, size=shape).astype(np.bool_)
        b = rng.integers(0, 2, size=bshape).astype(np.bool_)
        if t % 2:
            a, b = b, a
        w.case(f"logical{t}_{op}", op, {}, [a, b], "BINARY", {"fn": LOGICAL[op]}, out_type=TensorProto.BOOL)


def mod_cases(w, rng, n):
    """Mod: fmod=0 (the divisor's sign) on INT64/INT32, fmod=1 (the dividend's) on those and FP32, signs mixed,
    broadcast either way."""
    for t in range(n):
        shape = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 5)))]
        bshape = [d if rng.integers(0, 3) else 1 for d in shape[int(rng.integers(0, len(shape) + 1)):]]
        fmod = t % 2 if t % 3 != 2 else 1
        dt = [np.int64, np.int32, np.float32][t % 3]
        a = rng.integers(-50, 51, size=shape).astype(dt)
        b = np.asarray(rng.integers(1, 9, size=bshape) * rng.choice([-1, 1], size=bshape), dtype=dt)
        if dt == np.float32:
            a = a + rng.uniform(-1, 1, size=shape).astype(dt)
            b = np.asarray(b * rng.uniform(0.5, 1.5, size=bshape), dtype=dt)
        if t % 4 == 3 and dt != np.float32:
            a, b = b, a  # small dividends, large divisors
            b[b == 0] = 7
        w.case(f"mod{t}_{np.dtype(dt).name}_fmod{fmod}", "Mod", {"fmod": fmod}, [a, b], "BINARY",
               {"fn": 15 if fmod else 14})


def gather_elements_cases(w, rng, n):
    """GatherElements on axes 0, 1 and -1 (and others), negative indices, INT64/INT32 indices,
    indices smaller than the data off the axis."""
    for t in range(n):
        shape = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 5)))]
        nd = len(shape)
        ax = [0, 1, -1][t % 3] if nd > 1 else [0, -1][t % 2]
        if t >= 12:
            ax = int(rng.integers(-nd, nd))
        dt = [np.float32, np.int64, np.bool_][t % 3]
        x = rng.integers(-100, 100, size=shape).astype(dt) if dt != np.bool_ else \
            rng.integers(0, 2, size=shape).astype(dt)
        dim = shape[ax]
        ishape = [int(rng.integers(1, 7)) if i == ax % nd else int(rng.integers(1, d + 1))
                  for i, d in enumerate(shape)]
        idx = rng.integers(-dim, dim, size=ishape).astype([np.int64, np.int32][t % 4 == 1])
        w.case(f"gather_elements{t}_axis{ax}", "GatherElements", {"axis": ax}, [x, idx], "GATHER_ELEMENTS",
               {"axis": ax})


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    outdir = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1234
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(seed)
    w = Writer(outdir, rng)
    conv_cases(w, rng, 40)
    conv_transpose_cases(w, rng, 20)
    pool_cases(w, rng, 40)
    resize_cases(w, rng, 60)
    softmax_ln_cases(w, rng, 16)
    gather_slice_cases(w, rng, 20)
    misc_cases(w, rng, 10)
    elementwise_cases(w, rng, 16)
    compare_cases(w, rng, 30)
    gather_elements_cases(w, rng, 24)
    mod_cases(w, rng, 24)
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump({"seed": seed, "cases": w.cases}, f, indent=0)
    print(f"{len(w.cases)} cases from onnxruntime {ort.__version__} (seed {seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
