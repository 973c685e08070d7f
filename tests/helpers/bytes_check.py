#!/usr/bin/env python3
"""bytes_check.py: BYTES (string) tensors end to end against a CPU inferd, through Triton's own client
(tritonclient.http): Triton's simple_string model built as ONNX here, over JSON, the binary extension and
system shared memory; Cast between strings and numbers and the ops that move strings, checked against
onnxruntime on the same model; malformed BYTES refused with a 400 naming the input.

usage: bytes_check.py setup REPO     (writes the repository)
       bytes_check.py check URL REPO [PYDIR]   (against a daemon serving REPO with the models loaded;
                                                PYDIR: inferd's Python client, checked to refuse BYTES)"""
import concurrent.futures
import json
import os
import struct
import sys
import urllib.error
import urllib.request

import numpy as np

FAILURES = []
N = 8  # elements per row of string_casts

SIMPLE_STRING = """
name: "simple_string"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_STRING dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_STRING dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_STRING dims: [ 16 ] }
]
"""

# string_casts: FTEXT -> the float dtypes, ITEXT -> the integer ones; NUM (FP32) and INUM (INT64) -> text.
CASTS = [("F32", "FLOAT"), ("F16", "FLOAT16"), ("I64", "INT64"), ("I32", "INT32"), ("I8", "INT8"),
         ("U8", "UINT8"), ("B", "BOOL")]
PBTYPE = {"STRING": "TYPE_STRING", "FLOAT": "TYPE_FP32", "FLOAT16": "TYPE_FP16", "INT64": "TYPE_INT64",
          "INT32": "TYPE_INT32", "INT8": "TYPE_INT8", "UINT8": "TYPE_UINT8", "BOOL": "TYPE_BOOL"}


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def pbtxt(name, inputs, outputs):
    """config.pbtxt for name: max_batch_size 8, (name, onnx type name, dims) per tensor."""
    def entries(ts):
        return ",\n".join('  { name: "%s" data_type: %s dims: [ %s ] }' % (n, PBTYPE[t], ", ".join(map(str, d)))
                          for n, t, d in ts)
    return 'name: "%s"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [\n%s\n]\noutput [\n%s\n]\n' % (
        name, entries(inputs), entries(outputs))


def save(root, name, nodes, inputs, outputs, inits=(), config=None):
    """Write root/name/1/model.onnx and its config.pbtxt; inputs/outputs: (name, type, dims w/o batch)."""
    import onnx
    from onnx import TensorProto as T, helper
    vi = lambda ts: [helper.make_tensor_value_info(n, getattr(T, t), ["batch"] + [
        "len%d" % i if x < 0 else x for i, x in enumerate(d)]) for n, t, d in ts]
    g = helper.make_graph(nodes, name, vi(inputs), vi(outputs), list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    os.makedirs(os.path.join(root, name, "1"))
    onnx.save(m, os.path.join(root, name, "1", "model.onnx"))
    open(os.path.join(root, name, "config.pbtxt"), "w").write(config or pbtxt(name, inputs, outputs))


def setup_simple_string(root, name="simple_string"):
    """Triton's simple_string as ONNX: Cast(string->int32), Add and Sub, Cast(int32->string)."""
    from onnx import TensorProto as T, helper
    h = helper.make_node
    save(root, name, [
        h("Cast", ["INPUT0"], ["a"], to=T.INT32), h("Cast", ["INPUT1"], ["b"], to=T.INT32),
        h("Add", ["a", "b"], ["sum"]), h("Sub", ["a", "b"], ["diff"]),
        h("Cast", ["sum"], ["OUTPUT0"], to=T.STRING), h("Cast", ["diff"], ["OUTPUT1"], to=T.STRING)],
        [("INPUT0", "STRING", [16]), ("INPUT1", "STRING", [16])],
        [("OUTPUT0", "STRING", [16]), ("OUTPUT1", "STRING", [16])],
        config=SIMPLE_STRING.replace('"simple_string"', '"%s"' % name))



def setup_simple_identity(root):
    """Triton's simple_identity: one BYTES tensor of any length, returned as it came."""
    from onnx import helper
    save(root, "simple_identity", [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
         [("INPUT0", "STRING", [-1])], [("OUTPUT0", "STRING", [-1])],
         config=pbtxt("simple_identity", [("INPUT0", "STRING", [-1])], [("OUTPUT0", "STRING", [-1])]))



def setup(root):
    from onnx import TensorProto as T, helper, numpy_helper
    h = helper.make_node
    setup_simple_string(root)
    setup_simple_identity(root)
    # Warm-up runs BYTES inputs as the text "0" (zeros) or "0"/"1" (random): the Casts parse them.
    setup_simple_string(root, "string_warm")
    json.dump({"warmup": [{"batch_sizes": [1, 8], "data": "zeros"}, {"batch_sizes": [2], "data": "random"}]},
              open(os.path.join(root, "string_warm", "model.json"), "w"))
    nodes = [h("Cast", ["FTEXT" if o[0] == "F" else "ITEXT"], [o], to=getattr(T, t)) for o, t in CASTS]
    nodes += [h("Cast", ["NUM"], ["NUMTEXT"], to=T.STRING), h("Cast", ["INUM"], ["INUMTEXT"], to=T.STRING)]
    save(root, "string_casts", nodes,
         [("FTEXT", "STRING", [N]), ("ITEXT", "STRING", [N]), ("NUM", "FLOAT", [N]), ("INUM", "INT64", [N])],
         [(o, t, [N]) for o, t in CASTS] + [("NUMTEXT", "STRING", [N]), ("INUMTEXT", "STRING", [N])])
    # Identity, Reshape, Unsqueeze, Squeeze, Flatten, Concat, Tile, Gather.
    inits = [numpy_helper.from_array(np.array([0, 6], np.int64), "shape6"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "reps12"),
             numpy_helper.from_array(np.array([7, 0, 2, 11, 19, 23], np.int64), "pick")]
    save(root, "string_moves", [
        h("Identity", ["S"], ["s0"]), h("Reshape", ["s0", "shape6"], ["s1"]),
        h("Unsqueeze", ["s1", "axis1"], ["s2"]), h("Squeeze", ["s2", "axis1"], ["s3"]),
        h("Flatten", ["s3"], ["s4"], axis=1), h("Concat", ["s4", "s1"], ["s5"], axis=1),
        h("Tile", ["s5", "reps12"], ["s6"]), h("Gather", ["s6", "pick"], ["O"], axis=1)],
        [("S", "STRING", [2, 3])], [("O", "STRING", [6])], inits)
    # A string initializer (string_data): text to an index, the index to a name.
    save(root, "string_const", [h("Cast", ["S"], ["idx"], to=T.INT64), h("Gather", ["names", "idx"], ["O"], axis=0)],
         [("S", "STRING", [1])], [("O", "STRING", [1])],
         [helper.make_tensor("names", T.STRING, [3], [b"zero", b"one", "tw\u00f6".encode()])])
    # A string through an op that does not carry strings: refused at load naming node and op.
    save(root, "string_refused", [h("Transpose", ["S"], ["O"], name="flip", perm=[0, 2, 1])],
         [("S", "STRING", [2, 3])], [("O", "STRING", [3, 2])])


def ort_run(root, name, feeds):
    import onnxruntime as ort
    s = ort.InferenceSession(os.path.join(root, name, "1", "model.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feeds)))


def post(url, path, body, headers=None):
    """POST body (bytes) to url+path: (status, parsed JSON or raw bytes)."""
    req = urllib.request.Request("http://%s%s" % (url, path), data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def as_bytes_array(a):
    return np.array([[str(int(x)).encode() for x in row] for row in a], dtype=np.object_)


def check_simple_string(client, hc):
    """simple_string over JSON, the binary extension and shared memory, and batched requests."""
    a = np.arange(16, dtype=np.int32).reshape(1, 16) - 3
    b = np.full((1, 16), 7, dtype=np.int32)
    for binary in (False, True):
        ins = [hc.InferInput("INPUT0", [1, 16], "BYTES"), hc.InferInput("INPUT1", [1, 16], "BYTES")]
        ins[0].set_data_from_numpy(as_bytes_array(a), binary_data=binary)
        ins[1].set_data_from_numpy(as_bytes_array(b), binary_data=binary)
        outs = [hc.InferRequestedOutput("OUTPUT0", binary_data=binary),
                hc.InferRequestedOutput("OUTPUT1", binary_data=binary)]
        r = client.infer("simple_string", ins, outputs=outs)
        got0, got1 = r.as_numpy("OUTPUT0"), r.as_numpy("OUTPUT1")
        to_int = lambda x: np.array([[int(v) for v in row] for row in x], dtype=np.int64)
        check(got0.shape == (1, 16) and (to_int(got0) == a + b).all(), "simple_string sum (binary=%s): %s" % (binary, got0))
        check((to_int(got1) == a - b).all(), "simple_string diff (binary=%s): %s" % (binary, got1))
        check(r.get_output("OUTPUT0")["datatype"] == "BYTES", "the output's datatype is BYTES")


def check_batched(url, hc):
    """Requests in flight together each get exactly their own strings back."""
    def one(k):
        c = hc.InferenceServerClient(url)
        rows = 1 + k % 3
        a = np.arange(rows * 16, dtype=np.int32).reshape(rows, 16) * (k + 1)
        ins = [hc.InferInput("INPUT0", [rows, 16], "BYTES"), hc.InferInput("INPUT1", [rows, 16], "BYTES")]
        ins[0].set_data_from_numpy(as_bytes_array(a), binary_data=k % 2 == 0)
        ins[1].set_data_from_numpy(as_bytes_array(a * 0 + k), binary_data=k % 2 == 1)
        r = c.infer("simple_string", ins)
        got = np.array([[int(v) for v in row] for row in r.as_numpy("OUTPUT0")])
        return got.shape == (rows, 16) and (got == a + k).all()
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        oks = list(ex.map(one, range(32)))
    check(all(oks), "concurrent simple_string requests: %d of 32 got their own answer" % sum(oks))


def check_shm(client, hc):
    """simple_string's inputs and outputs in system shared memory, packed as Triton packs them."""
    import tritonclient.utils as tu
    import tritonclient.utils.shared_memory as shm
    a = as_bytes_array(np.arange(16, dtype=np.int32).reshape(1, 16) * 11)
    b = as_bytes_array(np.full((1, 16), -4, dtype=np.int32))
    sa, sb = tu.serialize_byte_tensor(a), tu.serialize_byte_tensor(b)
    na, nb, out_size = tu.serialized_byte_size(sa), tu.serialized_byte_size(sb), 16 * (4 + 12)
    client.unregister_system_shared_memory()
    regions = [("bytes_in0", "/inferd_bytes_in0", na), ("bytes_in1", "/inferd_bytes_in1", nb),
               ("bytes_out0", "/inferd_bytes_out0", out_size), ("bytes_out1", "/inferd_bytes_out1", out_size)]
    handles = [shm.create_shared_memory_region(n, k, s) for n, k, s in regions]
    try:
        shm.set_shared_memory_region(handles[0], [sa])
        shm.set_shared_memory_region(handles[1], [sb])
        for n, k, s in regions:
            client.register_system_shared_memory(n, k, s)
        ins = [hc.InferInput("INPUT0", [1, 16], "BYTES"), hc.InferInput("INPUT1", [1, 16], "BYTES")]
        ins[0].set_shared_memory("bytes_in0", na)
        ins[1].set_shared_memory("bytes_in1", nb)
        outs = [hc.InferRequestedOutput("OUTPUT0"), hc.InferRequestedOutput("OUTPUT1")]
        outs[0].set_shared_memory("bytes_out0", out_size)
        outs[1].set_shared_memory("bytes_out1", out_size)
        r = client.infer("simple_string", ins, outputs=outs)
        o0 = shm.get_contents_as_numpy(handles[2], np.object_, [1, 16])
        o1 = shm.get_contents_as_numpy(handles[3], np.object_, [1, 16])
        ai = np.array([[int(v) for v in row] for row in a])
        check([int(v) for v in o0[0]] == list(ai[0] - 4), "shm OUTPUT0: %s" % o0)
        check([int(v) for v in o1[0]] == list(ai[0] + 4), "shm OUTPUT1: %s" % o1)
        check(r.get_output("OUTPUT0") is not None, "the shm answer describes OUTPUT0")
        # An input region whose packed data ends early: a 400 naming the input.
        ins[0].set_shared_memory("bytes_in0", na - 1)
        try:
            client.infer("simple_string", ins, outputs=outs)
            check(False, "a short BYTES shm input was accepted")
        except Exception as e:
            check("INPUT0" in str(e), "short BYTES shm input refused naming it: %s" % e)
    finally:
        client.unregister_system_shared_memory()
        for hd in handles:
            shm.destroy_shared_memory_region(hd)


FTEXT = [["1.5", " -2", "+7", "3.25e2", "1e40", "0x1p3", "nan", "-INF"],
         ["Infinity", "1.5abc", "-0", "1e-3", ".5", "7.", "65504", "70000"]]
ITEXT = [["1", " -2", "+7", "300", "1e3", "0x10", "007", "-1"],
         ["255", "256", "9", "1.5abc", "-0", "2147483648", " 42", "-129"]]
NUM = np.array([[0.1, 1e20, -2.5, np.nan, np.inf, 1 / 3, 123456789.0, 1e-7],
                [100.0, -0.0, 3e38, 1e-5, 0.0001, 65504.0, 2.0 ** -149, 12345678.0]], np.float32)
INUM = np.array([[0, -1, 2 ** 63 - 1, -2 ** 63, 10, 255, 256, -255]] * 2, np.int64)


def same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f":
        return x.shape == y.shape and ((x == y) | (np.isnan(x) & np.isnan(y))).all()
    return x.shape == y.shape and (x == y).all()


def check_casts(root, client, hc):
    """Cast between strings and numbers, element for element as onnxruntime computes it."""
    enc = lambda rows: np.array([[v.encode() for v in row] for row in rows], dtype=np.object_)
    ref = ort_run(root, "string_casts", {"FTEXT": np.array(FTEXT, dtype=object),
                                         "ITEXT": np.array(ITEXT, dtype=object), "NUM": NUM, "INUM": INUM})
    for binary in (False, True):
        ins = [hc.InferInput("FTEXT", [2, N], "BYTES"), hc.InferInput("ITEXT", [2, N], "BYTES"),
               hc.InferInput("NUM", [2, N], "FP32"), hc.InferInput("INUM", [2, N], "INT64")]
        ins[0].set_data_from_numpy(enc(FTEXT), binary_data=binary)
        ins[1].set_data_from_numpy(enc(ITEXT), binary_data=not binary)
        ins[2].set_data_from_numpy(NUM, binary_data=True)
        ins[3].set_data_from_numpy(INUM, binary_data=binary)
        outs = [hc.InferRequestedOutput(n, binary_data=True) for n, _ in CASTS]
        outs += [hc.InferRequestedOutput(n, binary_data=binary) for n in ("NUMTEXT", "INUMTEXT")]
        r = client.infer("string_casts", ins, outputs=outs)
        for name, _ in CASTS:
            check(same(r.as_numpy(name), ref[name]), "Cast string->%s: %s, onnxruntime %s" % (
                name, r.as_numpy(name), ref[name]))
        for name in ("NUMTEXT", "INUMTEXT"):
            got = [[v.decode() if isinstance(v, bytes) else v for v in row] for row in r.as_numpy(name)]
            want = [[str(v) for v in row] for row in ref[name]]
            check(got == want, "Cast %s: %s, onnxruntime %s" % (name, got, want))


def check_moves(root, client, hc):
    """Identity, Reshape, (Un)Squeeze, Flatten, Concat, Tile, Gather on strings; a string initializer."""
    s = np.array([[["a%d%d" % (r, k) for k in range(3)] for _ in range(2)] for r in range(3)], dtype=object)
    s[1, 1, 2] = "üñï\u00e9"
    ref = ort_run(root, "string_moves", {"S": s})["O"]
    t = hc.InferInput("S", [3, 2, 3], "BYTES")
    t.set_data_from_numpy(np.vectorize(lambda v: v.encode())(s).astype(np.object_), binary_data=False)
    got = client.infer("string_moves", [t], outputs=[hc.InferRequestedOutput("O", binary_data=False)]).as_numpy("O")
    got = [[v.decode() if isinstance(v, bytes) else v for v in row] for row in got]
    check(got == ref.tolist(), "string_moves: %s, onnxruntime %s" % (got, ref.tolist()))
    u = hc.InferInput("S", [3, 1], "BYTES")
    u.set_data_from_numpy(np.array([[b"2"], [b"0"], [b" 1"]], dtype=np.object_), binary_data=True)
    got = client.infer("string_const", [u]).as_numpy("O").tolist()
    ref = ort_run(root, "string_const", {"S": np.array([["2"], ["0"], [" 1"]], dtype=object)})["O"]
    check(got == [[v.encode() for v in row] for row in ref.tolist()], "string_const: %s, onnxruntime %s" % (got, ref))


def packed(strings):
    return b"".join(struct.pack("<I", len(s)) + s for s in strings)


def check_refusals(url):
    """Malformed BYTES: a 400 naming the input; a Cast of text that is no number fails that request only."""
    path = "/v2/models/simple_string/infer"
    good = [str(i).encode() for i in range(16)]

    def infer(i0, i1=None, hdr=None, bin_=b""):
        ins = [dict(name="INPUT0", shape=[1, 16], datatype="BYTES", **i0),
               dict(name="INPUT1", shape=[1, 16], datatype="BYTES", data=[s.decode() for s in good])]
        js = json.dumps({"inputs": ins}).encode()
        headers = {"Inference-Header-Content-Length": str(len(js))} if hdr else {}
        return post(url, path, js + bin_, headers)

    cases = [
        ("15 JSON elements", dict(data=[str(i) for i in range(15)]), None, b""),
        ("a number as a BYTES element", dict(data=[1] + [str(i) for i in range(15)]), None, b""),
        ("an element past the slot", dict(data=["9" * 300] + [str(i) for i in range(15)]), None, b""),
        ("a length running past the end", dict(parameters={"binary_data_size": len(packed(good[:15])) + 6}), 1,
         packed(good[:15]) + struct.pack("<I", 50) + b"12"),
        ("15 packed elements", dict(parameters={"binary_data_size": len(packed(good[:15]))}), 1, packed(good[:15])),
        ("17 packed elements", dict(parameters={"binary_data_size": len(packed(good + good[:1]))}), 1,
         packed(good + good[:1])),
    ]
    for what, i0, hdr, bin_ in cases:
        st, raw = infer(i0, hdr=hdr, bin_=bin_)
        check(st == 400 and b"INPUT0" in raw, "%s: %d %s" % (what, st, raw[:200]))
    st, raw = infer(dict(data=["abc"] + [str(i) for i in range(15)]))
    check(st >= 400 and b"Cast" in raw and b"abc" in raw, "Cast of 'abc' to INT32: %d %s" % (st, raw[:200]))
    st, raw = infer(dict(data=[s.decode() for s in good]))
    check(st == 200, "a good request after the failed Cast: %d %s" % (st, raw[:200]))


def check_warm(url):
    """The model warmed up on BYTES inputs loaded and answers."""
    a = np.arange(16).reshape(1, 16)
    ins = [{"name": n, "shape": [1, 16], "datatype": "BYTES", "data": [str(v) for v in a[0]]} for n in ("INPUT0", "INPUT1")]
    st, raw = post(url, "/v2/models/string_warm/infer", json.dumps({"inputs": ins}).encode())
    check(st == 200 and json.loads(raw)["outputs"][0]["data"] == [str(2 * v) for v in a[0]],
          "string_warm: %d %s" % (st, raw[:200]))


def check_metadata(url):
    with urllib.request.urlopen("http://%s/v2/models/simple_string" % url, timeout=30) as r:
        meta = json.loads(r.read())
    check([t["datatype"] for t in meta["inputs"] + meta["outputs"]] == ["BYTES"] * 4, "metadata: %s" % meta)
    with urllib.request.urlopen("http://%s/v2/models/simple_string/config" % url, timeout=30) as r:
        cfg = json.loads(r.read())
    check(all(t["data_type"] == "TYPE_STRING" for t in cfg["input"] + cfg["output"]), "config: %s" % cfg)


def check_refused_load(url):
    """A string handed to an op that cannot take one: the load is refused naming node and op."""
    st, raw = post(url, "/v2/repository/models/string_refused/load", b"")
    check(st == 400 and b"flip" in raw and b"Transpose" in raw, "loading string_refused: %d %s" % (st, raw[:300]))
    with urllib.request.urlopen("http://%s/v2/models/simple_string/ready" % url, timeout=30) as r:
        check(r.status == 200, "simple_string is ready after the refused load")


def check_inferd_client(url, pydir):
    """inferd's own Python client does not carry BYTES: it says so, naming the tensors."""
    sys.path.insert(0, pydir)
    from inferd import http as ih
    from inferd.errors import InvalidRequest
    c = ih.Client("http://" + url)
    try:
        c.infer("simple_string", {"INPUT0": np.zeros((1, 16)), "INPUT1": np.zeros((1, 16))})
        check(False, "inferd's Python client sent BYTES")
    except InvalidRequest as e:
        check("BYTES" in str(e) and "INPUT0" in str(e), "inferd's Python client's refusal: %s" % e)
    finally:
        c.close()


def main():
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
        return 0
    import tritonclient.http as hc
    url, root = sys.argv[2], sys.argv[3]
    client = hc.InferenceServerClient(url)
    check_metadata(url)
    check_warm(url)
    check_simple_string(client, hc)
    check_batched(url, hc)
    check_shm(client, hc)
    check_casts(root, client, hc)
    check_moves(root, client, hc)
    check_refusals(url)
    check_refused_load(url)
    if len(sys.argv) > 4:
        check_inferd_client(url, sys.argv[4])
    print("%d failures" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
