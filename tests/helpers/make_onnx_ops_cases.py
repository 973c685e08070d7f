#!/usr/bin/python3
"""make_onnx_ops_cases.py: random one-node ONNX models of the ops that exporters emit for masks, indexing,
scans and recurrences (IsNaN, IsInf, Not, Xor, And, Or, Trilu, CumSum, GatherND, ScatterND, Dropout's mask, TopK,
RNN, GRU, LSTM, ScatterElements, OneHot, InstanceNormalization, GroupNormalization, Einsum, the Reduce family, Ceil, Floor, Round,
ArgMax, ArgMin, Tile), each run by
onnxruntime; written as OUTDIR/manifest.json in make_onnx_node_cases.py's format, every case marked
must_load (a refusal fails), for onnx_node_engine.

Usage: make_onnx_ops_cases.py OUTDIR [SEED]        exit 77 when onnx or onnxruntime cannot be imported."""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    import onnxruntime as ort
except ImportError as e:
    print(f"skip: {e}", file=sys.stderr)
    sys.exit(77)

ELEM = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
        "bool": TensorProto.BOOL, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "float16": TensorProto.FLOAT16}
NAMES = {"float32": "FP32", "int64": "INT64", "int32": "INT32", "bool": "BOOL", "int8": "INT8", "uint8": "UINT8",
         "float16": "FP16"}


class Cases:
    """Builds, runs and records the cases."""

    def __init__(self, outdir, rng):
        self.outdir, self.rng, self.cases = outdir, rng, []

    def add(self, label, op, inputs, attrs=None, consts=None, nout=1, opset=17, out=None, refusal=None):
        """One node of op over inputs (arrays, None for an omitted one; consts: index -> array baked in as an
        initializer);
        out: the outputs' dtype names (default: one of input 0's); refusal: text the engine's refusal must name
        (then onnxruntime does not run it)."""
        consts = consts or {}
        gin, inits, feeds, names = [], [], {}, []
        for i, a in enumerate(inputs):
            n = f"in{i}"
            names.append(n if a is not None else "")
            if a is None:
                continue
            if i in consts:
                inits.append(onnx.numpy_helper.from_array(a, n))
            else:
                gin.append(helper.make_tensor_value_info(n, ELEM[a.dtype.name], list(a.shape)))
                feeds[n] = a
        outs = [f"out{k}" for k in range(nout)]
        node = helper.make_node(op, names, outs, **(attrs or {}))
        self.add_graph(label, [node], gin, feeds, inits, list(zip(outs, out or [inputs[0].dtype.name])), opset,
                       refusal)

    def add_graph(self, label, nodes, gin, feeds, inits, outs, opset=17, refusal=None):
        """A graph of nodes: inputs gin (value infos) fed feeds, initializers inits, outputs (name, dtype name)."""
        name = f"{len(self.cases):03d}_{label}"
        d = os.path.join(self.outdir, name)
        os.makedirs(d, exist_ok=True)
        graph = helper.make_graph(nodes, name, gin, [helper.make_tensor_value_info(o, ELEM[t], None) for o, t in outs],
                                  initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.save(model, os.path.join(d, "model.onnx"))
        if refusal is not None:
            self.cases.append({"name": name, "model": os.path.join(d, "model.onnx"), "expect_refusal": refusal})
            return
        sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        res = sess.run(None, feeds)
        self.cases.append({"name": name, "model": os.path.join(d, "model.onnx"), "node_test": True,
                           "must_load": True,
                           "inputs": [self.write(name, f"input{k}", a) for k, a in enumerate(feeds.values())],
                           "outputs": [self.write(name, f"output{k}", r) for k, r in enumerate(res)]})

    def write(self, case, tag, a):
        """One tensor as raw little-endian bytes beside the manifest."""
        a = np.ascontiguousarray(a)
        fname = f"{case}.{tag}.bin"
        a.tofile(os.path.join(self.outdir, fname))
        return {"file": fname, "dtype": NAMES[a.dtype.name], "shape": list(a.shape)}

    def shape(self, rank, lo=1, hi=6):
        """A random shape of the given rank."""
        return [int(x) for x in self.rng.integers(lo, hi + 1, size=rank)]

    def floats(self, shape, specials=False):
        """Random floats; with specials some are NaN and +-inf."""
        a = self.rng.standard_normal(shape).astype(np.float32)
        if specials:
            m = self.rng.random(shape)
            a[m < 0.15] = np.nan
            a[(m >= 0.15) & (m < 0.3)] = np.inf
            a[(m >= 0.3) & (m < 0.45)] = -np.inf
        return a


def elementwise(c):
    """IsNaN, IsInf (both signs, each alone), Not, Xor, And, Or with broadcasting."""
    for r in range(1, 5):
        x = c.floats(c.shape(r), specials=True)
        c.add(f"isnan_r{r}", "IsNaN", [x], out=["bool"])
        c.add(f"isinf_r{r}", "IsInf", [x], out=["bool"])
        c.add(f"isinf_pos_r{r}", "IsInf", [x], {"detect_negative": 0}, out=["bool"])
        c.add(f"isinf_neg_r{r}", "IsInf", [x], {"detect_positive": 0}, out=["bool"])
        b = c.rng.random(c.shape(r)) < 0.5
        c.add(f"not_r{r}", "Not", [b], out=["bool"])
        s = list(b.shape)
        s[c.rng.integers(0, r)] = 1
        for op in ("Xor", "And", "Or"):
            c.add(f"{op.lower()}_r{r}", op, [b, c.rng.random(s[1:] if r > 1 else s) < 0.5])


def trilu(c):
    """Upper and lower, k (negative, zero, positive, past the matrix) constant or an input, ranks 2 to 4."""
    for i in range(12):
        r = 2 + i % 3
        x = c.floats(c.shape(r, 1, 7))
        k = np.array(int(c.rng.integers(-8, 9)), dtype=np.int64)
        up = i % 2
        c.add(f"trilu_u{up}_k{int(k)}", "Trilu", [x, k], {"upper": up}, consts={1: k} if i < 8 else {}, opset=14)
    x = c.rng.integers(-50, 50, size=c.shape(3)).astype(np.int64)
    c.add("trilu_int64_default", "Trilu", [x], opset=14)


def cumsum(c):
    """Every axis (negative too; constant or an input), exclusive and reverse, FP32, INT64, INT32."""
    for i in range(16):
        r = 1 + i % 4
        x = c.floats(c.shape(r)) if i % 3 else c.rng.integers(-9, 9, size=c.shape(r)).astype(
            np.int64 if i % 2 else np.int32)
        ax = np.array(int(c.rng.integers(-r, r)), dtype=np.int64)
        c.add(f"cumsum_r{r}_a{int(ax)}", "CumSum", [x, ax],
              {"exclusive": int(c.rng.integers(0, 2)), "reverse": int(c.rng.integers(0, 2))},
              consts={1: ax} if i < 12 else {})


def nd(c):
    """GatherND (batch_dims 0 to 2, negative indices) and ScatterND (every reduction, unique tuples)."""
    for i in range(12):
        b = i % 3
        r = b + 1 + int(c.rng.integers(0, 3))
        d = c.shape(r, 2, 5)
        m = int(c.rng.integers(1, r - b + 1))
        tup = c.shape(int(c.rng.integers(0, 3)), 1, 4)
        ishape = d[:b] + tup + [m]
        hi = np.array(d[b:b + m])
        idx = c.rng.integers(0, 1 << 20, size=ishape) % hi
        idx = np.where(c.rng.random(ishape) < 0.3, idx - hi, idx).astype(np.int64)
        data = c.floats(d) if i % 2 else c.rng.integers(-9, 9, size=d).astype(np.int64)
        c.add(f"gathernd_b{b}_m{m}", "GatherND", [data, idx], {"batch_dims": b})
    for i in range(15):
        r = 1 + int(c.rng.integers(0, 4))
        d = c.shape(r, 2, 5)
        m = int(c.rng.integers(1, r + 1))
        cells = int(np.prod(d[:m]))
        n = int(c.rng.integers(1, cells + 1))
        flat = c.rng.permutation(cells)[:n]
        idx = np.stack(np.unravel_index(flat, d[:m]), axis=-1).astype(np.int64)
        red = ["none", "add", "mul", "max", "min"][i % 5]
        data = c.floats(d)
        upd = c.floats([n] + d[m:])
        c.add(f"scatternd_{red}_m{m}", "ScatterND", [data, idx, upd], {"reduction": red}, opset=18)


def dropout(c):
    """Dropout at inference with its mask output: the data passes, the mask is all true."""
    for r in range(1, 4):
        c.add(f"dropout_mask_r{r}", "Dropout", [c.floats(c.shape(r))], nout=2, opset=13, out=["float32", "bool"])


def topk(c):
    """TopK with a constant k: largest and smallest, every axis, k from 0 to the axis (distinct values)."""
    for i in range(10):
        r = 1 + i % 4
        shape = c.shape(r, 1, 7)
        x = c.rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float32) * 0.25
        ax = int(c.rng.integers(-r, r))
        k = np.array([int(c.rng.integers(0, shape[ax] + 1))], dtype=np.int64)
        c.add(f"topk_r{r}_a{ax}_k{int(k[0])}", "TopK", [x, k], {"axis": ax, "largest": i % 2}, consts={1: k},
              nout=2, out=["float32", "int64"])


RNN_ACTS = [("Sigmoid", 0, 0), ("Tanh", 0, 0), ("Relu", 0, 0), ("Affine", 1, 1), ("LeakyRelu", 1, 0),
            ("ThresholdedRelu", 1, 0), ("ScaledTanh", 1, 1), ("HardSigmoid", 1, 1), ("Elu", 1, 0),
            ("Softsign", 0, 0), ("Softplus", 0, 0)]


def rnn_case(c, cell, i):
    """One RNN/GRU/LSTM: direction, lengths, initial states, biases, peepholes and options varied by i."""
    gates, per = {"RNN": (1, 1), "GRU": (3, 2), "LSTM": (4, 3)}[cell]
    direction = ["forward", "reverse", "bidirectional"][i % 3]
    d = 2 if direction == "bidirectional" else 1
    t, b, inp, h = (int(v) for v in c.rng.integers(1, 6, size=4))
    attrs = {"hidden_size": h, "direction": direction}
    x = c.floats([t, b, inp])
    w, r = c.floats([d, gates * h, inp]) * 0.5, c.floats([d, gates * h, h]) * 0.5
    ins, consts = [x, w, r], {1: w, 2: r}
    if i % 4 != 3:
        ins.append(c.floats([d, 2 * gates * h]) * 0.5)
        consts[3] = ins[-1]
    if i % 2 == 1:
        while len(ins) < 4:
            ins.append(None)
        ins += [c.rng.integers(0, t + 1, size=b).astype(np.int32), c.floats([d, b, h])]
        if cell == "LSTM":
            ins += [c.floats([d, b, h]), c.floats([d, 3 * h]) * 0.3]
    if i % 5 == 2:
        acts = [RNN_ACTS[int(k)] for k in c.rng.integers(0, len(RNN_ACTS), size=per * d)]
        attrs["activations"] = [a[0] for a in acts]
        al = [float(v) for v in c.rng.uniform(0.1, 0.9, size=sum(a[1] for a in acts))]
        be = [float(v) for v in c.rng.uniform(0.1, 0.9, size=sum(a[2] for a in acts))]
        if al:
            attrs["activation_alpha"] = al
        if be:
            attrs["activation_beta"] = be
    if i % 5 == 4:
        attrs["clip"] = 0.7
    if cell == "GRU":
        attrs["linear_before_reset"] = i % 2
    if cell == "LSTM" and i % 6 == 5:
        attrs["input_forget"] = 1
    c.add(f"{cell.lower()}_{direction}_{i}", cell, ins, attrs, consts=consts, nout=3 if cell == "LSTM" else 2,
          opset=14, out=["float32"] * (3 if cell == "LSTM" else 2))


def rnn(c):
    """RNN, GRU and LSTM against onnxruntime."""
    for cell in ("RNN", "GRU", "LSTM"):
        for i in range(12):
            rnn_case(c, cell, i)


def scatter_elements(c):
    """ScatterElements at opsets 13 to 18 (the engine reads 13 on): every axis (negative too), each reduction, negative and duplicate
    indices (applied in order), INT64 and INT32 indices, FP32 and INT64 data."""
    for i in range(30):
        r = 1 + i % 4
        d = c.shape(r, 1, 5)
        ax = int(c.rng.integers(-r, r))
        ishape = [int(c.rng.integers(1, x + 1)) for x in d]
        ishape[ax] = int(c.rng.integers(1, 7))
        idx = c.rng.integers(-d[ax], d[ax], size=ishape).astype(np.int64 if i % 3 else np.int32)
        red = ["none", "add", "mul", "max", "min"][i % 5]
        opset = {"none": [13, 16, 18][i % 3], "add": 16 + 2 * (i % 2), "mul": 16 + 2 * (i % 2)}.get(red, 18)
        data = c.floats(d) if i % 4 else c.rng.integers(-9, 9, size=d).astype(np.int64)
        upd = c.floats(ishape) if i % 4 else c.rng.integers(-9, 9, size=ishape).astype(np.int64)
        attrs = {"axis": ax} if red == "none" else {"axis": ax, "reduction": red}
        c.add(f"scatterelements_{red}_r{r}_a{ax}_o{opset}", "ScatterElements", [data, idx, upd], attrs, opset=opset)


# The (indices, depth, values) dtypes onnxruntime 1.32 implements OneHot for.
ONEHOT_TYPES = [("int64", "int64", "float32"), ("int64", "int64", "int64"), ("int64", "int32", "float32"),
                ("int64", "float32", "float32"), ("int64", "float32", "int32"), ("int32", "int32", "float32"),
                ("int32", "float32", "float32"), ("float32", "int64", "int64"), ("float32", "float32", "float32")]


def onehot(c):
    """OneHot: indices INT64, INT32 or FP32 (truncated), negative and out-of-range indices, depth an INT64,
    INT32 or FP32 constant (a scalar or [1]) or computed from the input shapes, every axis (negative too),
    values FP32, INT64 or INT32; a depth read from the request refused naming it."""
    for i in range(18):
        r = 1 + i % 4
        depth = int(c.rng.integers(1, 7))
        it, dt, vt = ONEHOT_TYPES[i % len(ONEHOT_TYPES)]
        raw = c.rng.integers(-depth - 2, depth + 2, size=c.shape(r, 1, 4))
        idx = raw.astype(it) + (np.float32(0.25) * np.sign(raw).astype(np.float32) if it == "float32" else 0)
        dep = np.array(depth if i % 2 else [depth], dtype=dt)
        val = np.array([0.5, 2.0] if vt == "float32" else [-3, 7], dtype=vt)
        ax = int(c.rng.integers(-r - 1, r + 1))
        c.add(f"onehot_r{r}_a{ax}_{it}_{dt}_{vt}", "OneHot", [idx.astype(it), dep, val], {"axis": ax},
              consts={1: dep, 2: val}, opset=13, out=[vt])
    for ax in (-1, 1, 2):
        # depth computed from the input shapes (the indices' last dim), the batch and that dim variable (the
        # batch stays first: an output without it cannot be batched).
        idx = c.rng.integers(-6, 6, size=c.shape(2, 1, 5)).astype(np.int64)
        nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["depth"]),
                 helper.make_node("OneHot", ["x", "depth", "values"], ["y"], axis=ax)]
        inits = [onnx.numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
                 onnx.numpy_helper.from_array(np.array([0.0, 1.0], dtype=np.float32), "values")]
        c.add_graph(f"onehot_depth_from_shape_a{ax}", nodes,
                    [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", "S"])], {"x": idx}, inits,
                    [("y", "float32")], opset=13)
    nodes = [helper.make_node("Abs", ["d"], ["depth"]), helper.make_node("OneHot", ["x", "depth", "values"], ["y"])]
    c.add_graph("onehot_depth_from_data", nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 3]),
                helper.make_tensor_value_info("d", TensorProto.FLOAT, [1])], {}, [inits[1]], [("y", "float32")],
                opset=13, refusal="OneHot's depth 'depth' must be one value, a constant or computed from the input shapes")
    idx = np.array([1, 0, 2], dtype=np.int64)
    c.add("onehot_depth_input", "OneHot", [idx, np.array(3, dtype=np.int64), np.array([0, 1], dtype=np.int64)],
          opset=13, refusal="depth is the model input")


def norms(c):
    """InstanceNormalization (ranks 3 to 5), GroupNormalization at opset 18 (scale and bias per group) and 21
    (per channel), with epsilon varied.  A group holds one element or at least four: onnxruntime's FP32
    statistics drift from the exact ones by 6e-4 on two close values (a variance near epsilon), ours do not."""
    for i in range(8):
        r = 3 + i % 3
        shape = c.shape(r, 1, 5)
        shape[-1] = int(c.rng.integers(4, 7))
        ch = shape[1]
        eps = float([1e-5, 1e-3, 0.1][i % 3])
        s, b = c.floats([ch]), c.floats([ch])
        c.add(f"instancenorm_r{r}", "InstanceNormalization", [c.floats(shape) * 3 + 1, s, b], {"epsilon": eps},
              consts={1: s, 2: b}, opset=13 if i % 2 else 17)
    for i in range(12):
        r = 2 + i % 4
        g = int(c.rng.integers(1, 4))
        shape = c.shape(r, 1, 5)
        shape[1] = g * int(c.rng.choice([1, 4, 5] if r == 2 else [1, 2, 3]))
        if r > 2:
            shape[-1] = int(c.rng.integers(4, 7))
        opset = 18 if i % 2 else 21
        n = g if opset == 18 else shape[1]
        s, b = c.floats([n]), c.floats([n])
        c.add(f"groupnorm_o{opset}_r{r}_g{g}", "GroupNormalization", [c.floats(shape) * 2 - 1, s, b],
              {"num_groups": g, "epsilon": float([1e-5, 1e-2][i % 2])}, consts={1: s, 2: b}, opset=opset)


EINSUMS = [
    ("bhid,bhjd->bhij", "bhid", "bhjd"), ("bhij,bhjd->bhid", "bhij", "bhjd"), ("bij,bjk->bik", "bij", "bjk"),
    ("...ij,...jk->...ik", "xyij", "wyjk"), ("...ij,...jk->...ik", "xij", "xjk"), ("ij->ji", "ij", None),
    ("ij->i", "ij", None), ("i,j->ij", "i", "j"), ("ii->i", "ii", None), ("ij,jk", "ij", "jk"),
    ("ij,ij->i", "ij", "ij"), ("bij,bkj->bik", "bij", "bkj"), ("ijk->", "ijk", None), ("i,i->", "i", "i"),
    ("ij,kj->ik", "ij", "kj"), ("bn,anm,bm->ba", None, None), ("...ii->...i", "xii", None),
    ("ij,jk->ki", "ij", "jk"), ("abc,cd->abd", "abc", "cd"), ("bid,bjd->bij", "bid", "bjd"),
]


def einsum(c):
    """Einsum over the equations exporters write (batched matmuls, an ellipsis with broadcast batch dims,
    transposes, reductions, outer and inner products, diagonals), random sizes; three operands, malformed
    equations and operands that do not fit their terms refused, naming what."""
    for i, (eq, ta, tb) in enumerate(EINSUMS):
        if ta is None:
            c.add(f"einsum_{i}_3ops", "Einsum", [c.floats([2, 3]), c.floats([4, 3, 5]), c.floats([2, 5])],
                  {"equation": eq}, opset=13, refusal="1 or 2 operands")
            continue
        size = {ch: int(c.rng.integers(1, 6)) for ch in "abcdhijkmnxy"}
        size["w"] = 1  # an ellipsis dim of 1 broadcast against x
        shape = lambda t: [size[ch] for ch in t]
        ins = [c.floats(shape(ta))] + ([c.floats(shape(tb))] if tb else [])
        c.add(f"einsum_{i}", "Einsum", ins, {"equation": eq}, opset=13)
    x = c.floats([2, 3])
    for eq, why in (("ij->ii", "output label 'i' appears twice"), ("ij->k", "output label 'k' is in no operand"),
                    ("i...j...->ij", "malformed"), ("ij,jk->ik", "malformed, or not one term per operand (1)"),
                    ("...i->i", "an ellipsis summed away"), ("i%->i", "malformed"), ("ijk->i", "rank 2 does not fit")):
        c.add(f"einsum_refused_{len(c.cases)}", "Einsum", [x], {"equation": eq}, opset=13, refusal=why)


REDUCES = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceSumSquare", "ReduceLogSumExp"]


def reductions(c):
    """Every Reduce op at opset 13 (axes an attribute; ReduceSum's an input) and 18 (axes an input): ranks 1 to
    4, random axis sets (negative too, or none: all axes), keepdims either way, noop_with_empty_axes; the
    squaring/abs/exp ones refuse an empty-axes no-op."""
    for i in range(len(REDUCES) * 6):
        op = REDUCES[i % len(REDUCES)]
        opset = 13 if (i // len(REDUCES)) % 2 else 18
        r = int(c.rng.integers(1, 5))
        shape = c.shape(r, 1, 5)
        x = c.floats(shape)
        if op == "ReduceProd":
            x = (0.5 + c.rng.random(shape)).astype(np.float32)
        axes = [int(a) - (r if c.rng.integers(0, 2) else 0) for a in range(r) if c.rng.integers(0, 2)]
        attrs = {"keepdims": int(c.rng.integers(0, 2))}
        inputs, consts = [x], {}
        if axes and (opset == 18 or op == "ReduceSum"):
            inputs.append(np.array(axes, np.int64))
            consts = {1: inputs[1]}
        elif axes:
            attrs["axes"] = axes
        elif opset == 18 and i % 4 == 0 and REDUCES.index(op) <= REDUCES.index("ReduceProd"):
            attrs["noop_with_empty_axes"] = 1
        c.add(f"{op.lower()}_o{opset}_r{r}", op, inputs, attrs, consts=consts, opset=opset)
    c.add("reducel2_noop_refused", "ReduceL2", [c.floats([2, 3])], {"noop_with_empty_axes": 1}, opset=18,
          refusal="noop_with_empty_axes=1 with no axes is supported only for ReduceMean/Sum/Max/Min/Prod")


def rounding(c):
    """Ceil, Floor and Round (halves to even) on random values, exact halves of both signs, integers, +-0, NaN
    and +-inf."""
    for op in ("Ceil", "Floor", "Round"):
        for r in (1, 3):
            shape = c.shape(r, 1, 6)
            x = c.floats(shape) * 4
            x.flat[::3] = np.round(x.flat[::3] * 2) / 2
            c.add(f"{op.lower()}_r{r}", op, [x], opset=13 if r == 1 else 17)
        edge = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0, -0.0, 0.0, 1e8 + 0.5, np.nan, np.inf, -np.inf,
                         0.49999997, -0.49999997], np.float32)
        c.add(f"{op.lower()}_edges", op, [edge])


def argmax(c):
    """ArgMax and ArgMin: ranks 1 to 5, every axis (negative too), keepdims and select_last_index either way,
    FP32 (with NaN and infinities in some: onnxruntime's loop keeps the first element when it is NaN and never
    lets a later NaN win; on a 1-D input its vectorised path does not, so NaN cases have several lines), INT64
    and INT32 inputs with many ties (values from a small range)."""
    for i in range(40):
        r = 1 + i % 5
        shape = c.shape(r, 1, 6)
        kind = ["float32", "int64", "int32", "float32"][i % 4]
        if kind == "float32":
            x = (c.rng.integers(-3, 4, size=shape) * 0.5).astype(np.float32)
            if i % 8 == 3 and r > 1:
                shape[0] = max(shape[0], 2)
                x = (c.rng.integers(-3, 4, size=shape) * 0.5).astype(np.float32)
                m = c.rng.random(shape)
                x[m < 0.2] = np.nan
                x[(m >= 0.2) & (m < 0.3)] = np.inf
                x[(m >= 0.3) & (m < 0.35)] = -np.inf
        else:
            x = c.rng.integers(-4, 4, size=shape).astype(kind)
        ax = int(c.rng.integers(-r, r))
        op = "ArgMax" if i % 2 == 0 else "ArgMin"
        attrs = {"axis": ax, "keepdims": int(c.rng.integers(0, 2)), "select_last_index": (i // 2) % 2}
        c.add(f"{op.lower()}_r{r}_a{ax}_k{attrs['keepdims']}_l{attrs['select_last_index']}_{kind}", op, [x], attrs,
              opset=13, out=["int64"])
    x = c.floats([3, 200])
    c.add("argmax_default_attrs", "ArgMax", [x], opset=13, out=["int64"])
    c.add("argmin_last_axis", "ArgMin", [x], {"axis": -1, "keepdims": 0}, opset=13, out=["int64"])
    x = c.rng.integers(0, 50000, size=[2, 77]).astype(np.int32)
    c.add("argmax_clip_ids", "ArgMax", [x], {"axis": -1, "keepdims": 0}, opset=13, out=["int64"])
    c.add("argmax_axis_refused", "ArgMax", [x], {"axis": 2}, opset=13, out=["int64"],
          refusal="ArgMax/ArgMin axis out of range")
    c.add("argmax_half_refused", "ArgMax", [x.astype(np.float16)], opset=13, out=["int64"],
          refusal="input of dtype FP16 (FLOAT, INT64 or INT32)")


def tile(c):
    """Tile: ranks 1 to 5, repeats of 0, 1 and more (on the first axis too), FP32, INT64, INT32 and BOOL data;
    repeats a constant, or computed from the input shapes (Shape -> Slice -> Concat), or tiling shape values;
    the batch dim of a batched model tiled, malformed repeats and repeats read from the request refused naming
    them."""
    for i in range(30):
        r = 1 + i % 5
        shape = c.shape(r, 1, 4)
        kind = ["float32", "int64", "int32", "bool"][i % 4]
        x = c.floats(shape) if kind == "float32" else (c.rng.random(shape) < 0.5 if kind == "bool" else
                                                        c.rng.integers(-9, 9, size=shape).astype(kind))
        reps = c.rng.choice([1, 1, 2, 3], size=r).astype(np.int64)
        if i % 7 == 6:
            reps[int(c.rng.integers(0, r))] = 0
        if i % 3 == 0:
            reps[0] = 2
        c.add(f"tile_r{r}_{kind}_{'x'.join(str(int(v)) for v in reps)}", "Tile", [x, reps], consts={1: reps}, opset=13)
    for r in (2, 3):
        # repeats = [1, the dims after the batch] computed from the shape (the batch and S variable), so the
        # output [N, S * S(, 9)] follows from the input shapes only.
        x = c.floats([3, 4, 3][:r])
        nodes = [helper.make_node("Shape", ["x"], ["shape"]),
                 helper.make_node("Slice", ["shape", "one", "big"], ["rest"]),
                 helper.make_node("Concat", ["one", "rest"], ["reps"], axis=0),
                 helper.make_node("Tile", ["x", "reps"], ["y"])]
        inits = [onnx.numpy_helper.from_array(np.array([v], dtype=np.int64), n) for v, n in ((1, "one"), (1 << 30, "big"))]
        c.add_graph(f"tile_reps_from_shape_r{r}", nodes,
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 3][:r])], {"x": x},
                    inits, [("y", "float32")], opset=13)
    # Tile on shape values: [N, S] -> a [N, S, S] shape built by tiling [S] (the shape functions follow it).
    x = c.floats([2, 3])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Slice", ["shape", "zero", "one"], ["n"]),
             helper.make_node("Slice", ["shape", "one", "two"], ["s"]), helper.make_node("Tile", ["s", "two"], ["ss"]),
             helper.make_node("Concat", ["n", "ss"], ["nss"], axis=0),
             helper.make_node("ConstantOfShape", ["nss"], ["z"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("Unsqueeze", ["x", "minus1"], ["x3"]), helper.make_node("Add", ["z", "x3"], ["y"])]
    inits = [onnx.numpy_helper.from_array(np.array([v], dtype=np.int64), n)
             for v, n in ((0, "zero"), (1, "one"), (2, "two"), (-1, "minus1"))]
    c.add_graph("tile_shape_values", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S"])],
                {"x": x}, inits, [("y", "float32")], opset=13)
    # Tiling the batch dim of a batched model: each request's rows would interleave with the others'.
    reps = np.array([2, 1], dtype=np.int64)
    c.add_graph("tile_batch_refused", [helper.make_node("Tile", ["x", "reps"], ["y"], name="tile_b")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])], {}, [onnx.numpy_helper.from_array(reps, "reps")],
                [("y", "float32")], opset=13, refusal="node 'tile_b' (Tile) repeats the batch dim")
    x = c.floats([2, 3])
    for label, reps, why in (("2d", [[1], [2]], "repeats of rank 2 (must be 1-D)"),
                             ("negative", [1, -2], "repeats[1] is -2 (must be 0 or more)"),
                             ("length", [1, 2, 3], "Tile's repeats differ in length from the input's rank")):
        r = np.array(reps, dtype=np.int64)
        c.add(f"tile_refused_{label}", "Tile", [x, r], consts={1: r}, opset=13, refusal=why)
    c.add("tile_reps_input", "Tile", [x, np.array([1, 2], dtype=np.int64)], opset=13,
          refusal="repeats is the model input 'in1'")
    nodes = [helper.make_node("Add", ["r", "zero"], ["reps"]), helper.make_node("Tile", ["x", "reps"], ["y"])]
    c.add_graph("tile_reps_from_data", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                helper.make_tensor_value_info("r", TensorProto.INT64, [2])], {},
                [onnx.numpy_helper.from_array(np.zeros(2, dtype=np.int64), "zero")], [("y", "float32")], opset=13,
                refusal="Tile's repeats 'reps' must be a constant or computed from the input shapes")


def main():
    outdir = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    os.makedirs(outdir, exist_ok=True)
    c = Cases(outdir, np.random.default_rng(seed))
    for gen in (elementwise, trilu, cumsum, nd, dropout, topk, rnn, scatter_elements, onehot, norms, einsum, reductions, rounding, argmax, tile):
        gen(c)
    ran = sum("expect_refusal" not in case for case in c.cases)
    with open(os.path.join(outdir, "manifest.json"), "w") as fp:
        json.dump({"cases": c.cases, "refused": [], "min_ran": ran}, fp, indent=1)
    print(f"{len(c.cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
