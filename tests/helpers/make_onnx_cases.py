#!/usr/bin/python3
"""make_onnx_cases.py: ONNX models for test_onnx_decode, with what a correct decoder must read from them.

Usage: make_onnx_cases.py OUTDIR
Writes OUTDIR/*.onnx (and external data files) and OUTDIR/cases.json: a list of
{"file": name, "expect": {...}} for models that must load, read back through the
onnx package's own protobuf parser (an independent decoder), and
{"file": name, "error": substring} for models that must be refused with a message
holding that substring.  Some cases are written byte by byte (packed dims,
unpacked float_data, unknown fields of every wire type, corrupt encodings)
because onnx.helper never produces them.

Exits 77 when the onnx package cannot be imported.
"""
import json
import os
import struct
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto, AttributeProto
    from onnx import external_data_helper
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)


# --- a minimal protobuf writer, for encodings onnx.helper does not produce ---

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_varint(num, v):
    return key(num, 0) + varint(v)


def f_len(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(num, 2) + varint(len(payload)) + payload


def f_fixed32(num, raw4):
    return key(num, 5) + raw4


def f_fixed64(num, raw8):
    return key(num, 1) + raw8


def unknown_fields(base=90):
    """One unknown field of every wire type the decoder must skip."""
    return (f_varint(base, 300) + f_fixed64(base + 1, b"\x01" * 8) + f_len(base + 2, b"skip me")
            + f_fixed32(base + 3, b"\x02" * 4))


def opset(domain, version):
    return f_len(1, domain) + f_varint(2, version)


def value_info(name, elem, dims):
    shape = b"".join(f_len(1, f_varint(1, d) if isinstance(d, int) else f_len(2, d)) for d in dims)
    tensor_type = f_varint(1, elem) + f_len(2, shape)
    return f_len(1, name) + f_len(2, f_len(1, tensor_type))


def model_bytes(graph, opsets=(("", 17),), extra=b""):
    out = f_varint(1, 8) + f_len(2, "handmade") + f_len(7, graph)
    for d, v in opsets:
        out += f_len(8, opset(d, v))
    return out + extra


def graph_with_tensor(tensor, extra=b""):
    """A graph: one Identity node over one initializer."""
    node = f_len(1, "w") + f_len(2, "y") + f_len(3, "id") + f_len(4, "Identity")
    return (f_len(1, node) + f_len(2, "g") + f_len(5, tensor) + extra
            + f_len(12, value_info("y", 1, [1])))


def tensor_bytes(name, elem, dims, data=b"", packed_dims=False):
    if packed_dims:
        out = f_len(1, b"".join(varint(d) for d in dims))
    else:
        out = b"".join(f_varint(1, d) for d in dims)
    return out + f_varint(2, elem) + f_len(8, name) + data


# --- expectations, read back through the onnx package ---

def tensor_expect(t, base_dir=None, array=None):
    if array is None:
        array = numpy_helper.to_array(t, base_dir or "")
    a = np.ascontiguousarray(array)
    return {"name": t.name, "elem": t.data_type, "dims": list(t.dims), "hex": a.tobytes().hex()}


ATTR_FIELDS = [("f", 1), ("i", 2), ("s", 3), ("t", 4), ("g", 5), ("floats", 6), ("ints", 7),
               ("strings", 8), ("tensors", 9), ("graphs", 10), ("sparse_tensor", 11),
               ("sparse_tensors", 12), ("tp", 13), ("type_protos", 14)]


def attr_type(a):
    if a.type:
        return a.type
    for field, t in ATTR_FIELDS:
        if field in ("floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos"):
            if len(getattr(a, field)):
                return t
        elif a.HasField(field):
            return t
    raise ValueError("attribute without a value")


def attr_expect(a):
    t = attr_type(a)
    e = {"name": a.name, "type": t}
    if t == 1:
        e["f"] = float(np.float32(a.f))
    elif t == 2:
        e["i"] = a.i
    elif t == 3:
        e["s"] = a.s.decode()
    elif t == 4:
        e["t"] = tensor_expect(a.t)
    elif t == 6:
        e["floats"] = [float(np.float32(x)) for x in a.floats]
    elif t == 7:
        e["ints"] = list(a.ints)
    elif t == 8:
        e["strings"] = [s.decode() for s in a.strings]
    return e


def vi_expect(v):
    e = {"name": v.name, "elem": 0, "ndims": -1, "dims": []}
    if v.type.HasField("tensor_type"):
        tt = v.type.tensor_type
        e["elem"] = tt.elem_type
        if tt.HasField("shape"):
            e["ndims"] = len(tt.shape.dim)
            for d in tt.shape.dim:
                if d.HasField("dim_value"):
                    e["dims"].append({"value": d.dim_value})
                elif d.HasField("dim_param") and d.dim_param:
                    e["dims"].append({"param": d.dim_param})
                else:
                    e["dims"].append({})
    return e


def model_expect(m, base_dir=None, arrays=None):
    g = m.graph
    arrays = arrays or {}
    return {
        "ir_version": m.ir_version,
        "producer": m.producer_name,
        "opsets": [[o.domain, o.version] for o in m.opset_import],
        "graph": {
            "name": g.name,
            "nodes": [{"name": n.name, "op_type": n.op_type, "domain": n.domain,
                       "inputs": list(n.input), "outputs": list(n.output),
                       "attrs": [attr_expect(a) for a in n.attribute]} for n in g.node],
            "initializers": [tensor_expect(t, base_dir, arrays.get(t.name)) for t in g.initializer],
            "inputs": [vi_expect(v) for v in g.input],
            "outputs": [vi_expect(v) for v in g.output],
            "value_infos": [vi_expect(v) for v in g.value_info],
        },
    }


class Cases:
    def __init__(self, outdir):
        self.outdir = outdir
        self.cases = []

    def path(self, name):
        return os.path.join(self.outdir, name)

    def good(self, name, model, **kw):
        """A model that must load: saved with onnx, expectation read back from the file."""
        onnx.save_model(model, self.path(name))
        self.good_file(name, **kw)

    def good_file(self, name, base_dir=None, arrays=None):
        m = onnx.load_model(self.path(name), load_external_data=False)
        self.cases.append({"file": name, "expect": model_expect(m, base_dir, arrays)})

    def good_bytes(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)
        self.good_file(name)

    def bad_bytes(self, name, data, error):
        with open(self.path(name), "wb") as f:
            f.write(data)
        self.cases.append({"file": name, "error": error})

    def bad(self, name, model, error):
        self.bad_bytes(name, model.SerializeToString(), error)

    def write(self):
        with open(self.path("cases.json"), "w") as f:
            json.dump(self.cases, f, indent=1)


def small_model():
    """One Relu and one opset: every strict prefix of its file is invalid."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    nodes = [helper.make_node("Add", ["x", "w"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "small", [x], [y], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="small")


def basic_model():
    """Every attribute type, raw_data initializers, symbolic/fixed/unknown dims, several opsets."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "conv.w")
    b = numpy_helper.from_array(np.array([1, -2, 3], dtype=np.int64), "shape")
    h = numpy_helper.from_array(rng.standard_normal(5).astype(np.float16), "half")
    i8 = numpy_helper.from_array(np.array([-128, 0, 127], dtype=np.int8), "i8")
    sub = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "body",
                            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                            [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    t_attr = helper.make_tensor("tval", TensorProto.INT64, [2], [7, -9])
    all_attrs = helper.make_node(
        "AllAttrs", ["x", "", "conv.w"], ["z", "z2"], name="all", domain="test.domain",
        f=1.5, i=-(1 << 40), s="hello", t=t_attr, g=sub, floats=[0.25, -3.0, 1e-8],
        ints=[1, -1, 1 << 62], strings=["a", "bc", ""],
        tensors=[helper.make_tensor("t0", TensorProto.FLOAT, [1], [1.0])])
    empty_lists = helper.make_node("Lists", ["z"], ["z3"], name="", domain="test.domain")
    empty_lists.attribute.extend([helper.make_attribute("no_ints", [], attr_type=AttributeProto.INTS),
                                  helper.make_attribute("zero", 0)])
    conv = helper.make_node("Conv", ["x", "conv.w"], ["y"], name="conv", pads=[1, 1, 1, 1],
                            strides=[1, 1], kernel_shape=[3, 3])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 8, 8])
    unknown = onnx.ValueInfoProto(name="z")
    unknown.type.tensor_type.elem_type = TensorProto.FLOAT
    unknown.type.tensor_type.shape.dim.add()
    unknown.type.tensor_type.shape.dim.add().dim_value = 0
    noshape = onnx.ValueInfoProto(name="z2")
    noshape.type.tensor_type.elem_type = TensorProto.INT64
    seq = onnx.ValueInfoProto(name="z3")
    seq.type.sequence_type.elem_type.tensor_type.elem_type = TensorProto.FLOAT
    scalar = helper.make_tensor_value_info("scalar", TensorProto.BOOL, [])
    g = helper.make_graph([conv, all_attrs, empty_lists], "basic", [x, scalar], [y],
                          [w, b, h, i8], value_info=[unknown, noshape, seq])
    return helper.make_model(g, producer_name="make_onnx_cases", opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("test.domain", 3),
        helper.make_opsetid("com.microsoft", 1)])


def typed_model():
    """Initializers in the typed *_data fields, every data type that has one, plus empty and scalar tensors."""
    vals = {
        TensorProto.FLOAT: [1.5, -2.25, 3e-7, 0.0],
        TensorProto.INT64: [1, -1, 1 << 62, -(1 << 62)],
        TensorProto.INT32: [2147483647, -2147483648, 0, 5],
        TensorProto.INT8: [-128, -1, 0, 127],
        TensorProto.UINT8: [0, 1, 200, 255],
        TensorProto.INT16: [-32768, -1, 0, 32767],
        TensorProto.UINT16: [0, 1, 40000, 65535],
        TensorProto.BOOL: [True, False, True, True],
        TensorProto.FLOAT16: [1.0, -0.5, 65504.0, 6e-5],
        TensorProto.BFLOAT16: [1.0, -2.0, 3.5, 1e10],
        TensorProto.DOUBLE: [1e300, -1.0, 0.1, 2.0],
        TensorProto.UINT32: [0, 1, 4000000000, 4294967295],
        TensorProto.UINT64: [0, 1, 1 << 63, (1 << 64) - 1],
    }
    inits = [helper.make_tensor("typed_%d" % et, et, [2, 2], v) for et, v in vals.items()]
    inits.append(helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []))
    inits.append(helper.make_tensor("scalar", TensorProto.INT64, [], [42]))
    inits.append(helper.make_tensor("raw_i8", TensorProto.INT8, [3], b"\x80\x00\x7f", raw=True))
    for t in inits:
        assert t.name in ("raw_i8",) or not t.HasField("raw_data"), t.name
    node = helper.make_node("Identity", ["typed_1"], ["y"])
    g = helper.make_graph([node], "typed", [], [helper.make_tensor_value_info("y", 1, [2, 2])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def external_model(c):
    """onnx's own external data writer: several tensors in one file, plus a small one kept inline."""
    rng = np.random.default_rng(2)
    arrays = {"big": rng.standard_normal((64, 300)).astype(np.float32),
              "odd": rng.standard_normal(7).astype(np.float16),
              "ids": np.arange(5, dtype=np.int64),
              "tiny": np.array([1, 2, 3], dtype=np.uint8)}
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    node = helper.make_node("Identity", ["big"], ["y"])
    g = helper.make_graph([node], "ext", [], [helper.make_tensor_value_info("y", 1, [64, 300])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(m, c.path("external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external.weights", size_threshold=16)
    c.good_file("external.onnx", arrays=arrays)


def external_handmade(c):
    """External data at offsets onnx would not choose: 13 (unaligned), 65536+3 (a large unaligned view)."""
    small = np.arange(15, dtype=np.float32).reshape(3, 5)
    large = (np.arange(20000, dtype=np.float32) * 0.5).astype(np.float32)
    os.makedirs(c.path("w"), exist_ok=True)
    blob = b"J" * 13 + small.tobytes() + b"K" * (65536 + 3 - 13 - 60) + large.tobytes() + b"tail"
    with open(c.path("w/unaligned.bin"), "wb") as f:
        f.write(blob)

    def ext(name, elem, dims, location, offset, length=None):
        entries = f_len(13, f_len(1, "location") + f_len(2, location))
        entries += f_len(13, f_len(1, "offset") + f_len(2, str(offset)))
        if length is not None:
            entries += f_len(13, f_len(1, "length") + f_len(2, str(length)))
        entries += f_len(13, f_len(1, "checksum") + f_len(2, "ignored"))
        return tensor_bytes(name, elem, dims, entries + f_varint(14, 1))

    t_small = ext("w", 1, [3, 5], "w/unaligned.bin", 13, 60)
    t_large = ext("large", 1, [20000], "w/unaligned.bin", 65539)
    graph = graph_with_tensor(t_small, f_len(5, t_large))
    with open(c.path("external_unaligned.onnx"), "wb") as f:
        f.write(model_bytes(graph))
    m = onnx.load_model(c.path("external_unaligned.onnx"), load_external_data=False)
    c.cases.append({"file": "external_unaligned.onnx",
                    "expect": model_expect(m, arrays={"w": small, "large": large})})
    # The refused cases live in w/, so that the files their locations escape to exist (OUTDIR/escape.bin).
    with open(c.path("escape.bin"), "wb") as f:
        f.write(small.tobytes())
    for name, location, offset, error in [
            ("external_dotdot.onnx", "../escape.bin", 0, "leaves the model's directory"),
            ("external_dotdot2.onnx", "x/../../escape.bin", 0, "leaves the model's directory"),
            ("external_absolute.onnx", os.path.abspath(c.path("w/unaligned.bin")), 13, "is absolute"),
            ("external_missing.onnx", "nope.bin", 0, "nope.bin"),
            ("external_past_end.onnx", "unaligned.bin", len(blob) - 59, "past its end"),
            ("external_bad_offset.onnx", "unaligned.bin", "1x", "not a decimal number")]:
        c.bad_bytes("w/" + name, model_bytes(graph_with_tensor(ext("w", 1, [3, 5], location, offset))), error)
    c.bad_bytes("w/external_length.onnx", model_bytes(graph_with_tensor(
        ext("w", 1, [3, 5], "unaligned.bin", 13, 56))), "external data length 56")


def handmade_good(c):
    """Encodings onnx.helper never writes: packed dims, unpacked float_data/int64_data, unknown fields, no attr type."""
    unpacked = b"".join(f_fixed32(4, struct.pack("<f", v)) for v in (1.0, -2.0, 0.5, 8.0, 3.0, 9.0))
    t1 = tensor_bytes("w", 1, [2, 3], unpacked + unknown_fields(), packed_dims=True)
    t2 = tensor_bytes("i64", 7, [3], b"".join(f_varint(7, v) for v in (5, -5, 1 << 40)))
    t3 = tensor_bytes("f_split", 1, [3], f_len(4, struct.pack("<2f", 1.0, 2.0)) + f_fixed32(4, struct.pack("<f", 3.0)))
    attr_ints = f_len(1, "axes") + f_len(8, varint(0) + varint(2) + varint((1 << 64) - 3))
    attr_floats = f_len(1, "scales") + b"".join(f_fixed32(7, struct.pack("<f", v)) for v in (0.5, 2.0))
    attr_i_typed = f_len(1, "k") + f_varint(20, 2) + f_varint(3, 7) + unknown_fields(200)
    node = (f_len(1, "w") + f_len(1, "") + f_len(2, "y") + f_len(4, "Custom") + unknown_fields()
            + f_len(5, attr_ints) + f_len(5, attr_floats) + f_len(5, attr_i_typed) + f_len(7, "x.y"))
    graph = (unknown_fields() + f_len(1, node) + f_len(5, t1) + f_len(5, t2) + f_len(5, t3)
             + f_len(10, "doc") + f_len(12, value_info("y", 1, ["B", 3])))
    c.good_bytes("handmade.onnx", model_bytes(graph, (("", 13), ("ai.onnx", 13), ("x.y", 2)), unknown_fields()))


def handmade_bad(c):
    """Corrupt or refused encodings, each with the message the decoder must give."""
    raw4 = f_len(9, b"\0" * 4)
    good_graph = graph_with_tensor(tensor_bytes("w", 1, [1], raw4))
    good = model_bytes(good_graph)
    c.bad_bytes("len_past_end.onnx", f_varint(1, 8) + key(7, 2) + varint(len(good_graph) + 5) + good_graph,
                "runs past the end")
    c.bad_bytes("graph_wire.onnx", f_varint(1, 8) + f_varint(7, 3) + f_len(8, opset("", 13)),
                "graph (field 7) at byte 2: wire type varint, expected length-delimited")
    bad_node = f_len(1, "w") + f_len(2, "y") + f_varint(4, 5)
    c.bad_bytes("op_type_wire.onnx", model_bytes(f_len(1, f_len(1, "x") + f_len(4, "Relu")) + f_len(1, bad_node)),
                "graph.node[1]: op_type")
    c.bad_bytes("group.onnx", good + key(30, 3), "groups")
    c.bad_bytes("wire7.onnx", good + key(30, 7), "invalid wire type 7")
    c.bad_bytes("field0.onnx", good + varint(0 << 3 | 0) + varint(1), "invalid field number 0")
    c.bad_bytes("varint_long.onnx", good + key(30, 0) + b"\xff" * 10 + b"\x01", "varint longer than 64 bits")
    c.bad_bytes("varint_cut.onnx", good + key(30, 0) + b"\xff\xff", "truncated varint")
    c.bad_bytes("fixed_cut.onnx", good + key(30, 1) + b"\x01\x02", "truncated fixed64")
    c.bad_bytes("dims_overflow.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1 << 40, 1 << 40], raw4))), "dims overflow")
    c.bad_bytes("dims_overflow2.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 7, [1 << 31, 1 << 30, 4], raw4))), "dims overflow")
    c.bad_bytes("dims_negative.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [2, -1], raw4))), "dims[1] = -1 is negative")
    c.bad_bytes("dims_nine.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1] * 9, raw4))), "more than 8 dims")
    c.bad_bytes("raw_mismatch.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [3], f_len(9, b"\0" * 8)))), "raw_data holds 8 bytes, the dims and data type need 12")
    c.bad_bytes("typed_count.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [3], f_len(4, b"\0" * 8)))), "float_data holds 2 values, the dims need 3")
    c.bad_bytes("typed_field.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 7, [2], f_len(4, b"\0" * 8)))), "float_data cannot hold data type 7")
    c.bad_bytes("typed_packed_len.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1], f_len(4, b"\0" * 5)))), "not a multiple of 4")
    c.bad_bytes("bool_range.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 9, [2], f_len(5, varint(1) + varint(2))))), "does not fit")
    c.bad_bytes("int8_range.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 3, [1], f_len(5, varint(-129))))), "does not fit")
    c.bad_bytes("raw_and_typed.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1], raw4 + f_len(4, b"\0" * 4)))), "both raw_data and float_data")
    c.bad_bytes("no_data.onnx", model_bytes(graph_with_tensor(tensor_bytes("w", 1, [2]))), "has no data")
    c.bad_bytes("string_too_long.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 8, [1], f_len(6, "a" * 253)))), "at most 252")
    c.bad_bytes("string_raw.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 8, [1], f_len(9, b"abc")))), "string_data, not raw_data")
    c.bad_bytes("string_count.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 8, [2], f_len(6, "abc")))), "string_data holds 1 values, the dims need 2")
    c.bad_bytes("complex.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 14, [1], f_len(9, b"\0" * 8)))), "data type 14 is not supported")
    c.bad_bytes("segment.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1], raw4 + f_len(3, f_varint(1, 0))))), "segmented")
    c.bad_bytes("location_bad.onnx", model_bytes(graph_with_tensor(
        tensor_bytes("w", 1, [1], raw4 + f_varint(14, 2)))), "unknown data_location 2")
    c.bad_bytes("sparse.onnx", model_bytes(good_graph + f_len(15, f_varint(3, 1))),
                "sparse initializers are not supported")
    c.bad_bytes("no_graph.onnx", f_varint(1, 8) + f_len(8, opset("", 13)), "the model has no graph")
    c.bad_bytes("two_graphs.onnx", model_bytes(good_graph, extra=f_len(7, good_graph)), "field graph appears 2 times")
    c.bad_bytes("no_opset.onnx", model_bytes(good_graph, opsets=()), "imports no opset")
    c.bad_bytes("nul_name.onnx", model_bytes(graph_with_tensor(tensor_bytes("w\0x", 1, [1], raw4))),
                "name at byte")
    c.bad_bytes("no_op_type.onnx", model_bytes(f_len(1, f_len(1, "x"))), "node has no op_type")
    attr_node = lambda a: model_bytes(f_len(1, f_len(4, "Op") + f_len(5, a)))
    c.bad_bytes("attr_ref.onnx", attr_node(f_len(1, "a") + f_len(21, "b")), "ref_attr_name")
    c.bad_bytes("attr_mismatch.onnx", attr_node(f_len(1, "a") + f_varint(20, 2) + f_fixed32(2, b"\0" * 4)),
                "graph.node[0].attribute[0]: attribute of type 2 also sets a value field of type 1")
    c.bad_bytes("attr_no_tensor.onnx", attr_node(f_len(1, "a") + f_varint(20, 4)), "of type TENSOR has no tensor")
    c.bad_bytes("attr_none.onnx", attr_node(f_len(1, "a")), "neither a type nor a value")
    c.bad_bytes("attr_two.onnx", attr_node(f_len(1, "a") + f_varint(3, 1) + f_fixed32(2, b"\0" * 4)),
                "several value fields")
    c.bad_bytes("attr_noname.onnx", attr_node(f_varint(3, 1)), "attribute has no name")
    c.bad_bytes("attr_type.onnx", attr_node(f_len(1, "a") + f_varint(20, 99)), "unknown attribute type 99")
    c.bad_bytes("attr_f_wire.onnx", attr_node(f_len(1, "a") + f_varint(2, 1)), "f (field 2)")
    c.bad_bytes("shape_nine.onnx", model_bytes(good_graph + f_len(11, value_info("x", 1, [1] * 9))),
                "graph.input[0]: shape has more than 8 dims")
    c.bad_bytes("dim_negative.onnx", model_bytes(good_graph + f_len(11, value_info("x", 1, [-3]))),
                "graph.input[0].dim[0]: dim_value -3 is negative")
    c.bad_bytes("elem_range.onnx", model_bytes(good_graph + f_len(11, value_info("x", 1 << 33, [1]))),
                "out of the int32 range")
    c.bad_bytes("empty.onnx", b"", "empty file")
    c.bad_bytes("garbage.onnx", b"\x0a\xff\xff\xff\xff\x0f", "runs past the end")


def main():
    if len(sys.argv) != 2:
        print("usage: make_onnx_cases.py OUTDIR", file=sys.stderr)
        return 2
    c = Cases(sys.argv[1])
    os.makedirs(c.outdir, exist_ok=True)
    c.good("small.onnx", small_model())
    c.good("basic.onnx", basic_model())
    c.good("typed.onnx", typed_model())
    external_model(c)
    external_handmade(c)
    handmade_good(c)
    handmade_bad(c)
    c.write()
    print("make_onnx_cases: %d cases in %s" % (len(c.cases), c.outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
