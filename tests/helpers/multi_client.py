#!/usr/bin/env python3
"""multi_client.py URL [INFERCTL SOCKET DIR]: the two-input model of make_multi_onnx.py through a daemon.

HTTP JSON and the binary extension answer with the same bits, equal to a numpy reference computed
here; requests of different sequence lengths sent at once batch apart and each gets its own answer;
every refusal is a 400 naming the problem.  With INFERCTL, SOCKET and a scratch DIR, the same inputs
go through shared memory (inferctl infer --input NAME=FILE) and must print the same bits.
"""
import json
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request

try:
    import numpy as np
except ImportError as e:
    print("SKIP: python3 cannot import numpy (%s)" % e)
    sys.exit(77)

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def post(url, body, headers=None):
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def inputs(rows, seq, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, size=(rows, 4)).astype(np.float32) / np.float32(8)
    ids = rng.integers(0, 30000, size=(rows, seq)).astype(np.int64)
    return x, ids


def reference(x, ids):
    f = ids.astype(np.float32)
    return {"y": x * np.float32(2), "s": f.sum(axis=1, keepdims=True, dtype=np.float64).astype(np.float32),
            "z": f * np.float32(0.5)}


def json_body(x, ids, outputs=None):
    b = {"inputs": [{"name": "ids", "datatype": "INT64", "shape": list(ids.shape), "data": ids.tolist()},
                    {"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.flatten().tolist()}]}
    if outputs is not None:
        b["outputs"] = outputs
    return json.dumps(b).encode()


def infer_json(url, x, ids):
    status, _, body = post(url, json_body(x, ids))
    check(status == 200, "JSON infer: %d %s" % (status, body[:200]))
    out = json.loads(body)
    return {o["name"]: (o["datatype"], o["shape"], np.array(o["data"], dtype=np.float32)) for o in out["outputs"]}


def infer_binary(url, x, ids):
    hdr = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                       "parameters": {"binary_data_size": x.nbytes}},
                      {"name": "ids", "datatype": "INT64", "shape": list(ids.shape),
                       "parameters": {"binary_data_size": ids.nbytes}}],
           "outputs": [{"name": n, "parameters": {"binary_data": True}} for n in ("z", "y", "s")]}
    h = json.dumps(hdr).encode()
    status, headers, body = post(url, h + x.astype("<f4").tobytes() + ids.astype("<i8").tobytes(),
                                 {"Inference-Header-Content-Length": str(len(h))})
    check(status == 200, "binary infer: %d %s" % (status, body[:200]))
    n = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    meta = json.loads(body[:n])
    res, off = {}, n
    for o in meta["outputs"]:
        size = o["parameters"]["binary_data_size"]
        res[o["name"]] = (o["datatype"], o["shape"], np.frombuffer(body[off:off + size], dtype="<f4"))
        off += size
    check(off == len(body), "binary answer: %d bytes left over" % (len(body) - off))
    check([o["name"] for o in meta["outputs"]] == ["z", "y", "s"], "binary outputs out of order")
    return res


def same_bits(a, b):
    return a.astype(np.float32).tobytes() == b.astype(np.float32).tobytes()


def compare(what, got, ref, rows, seq):
    shapes = {"y": [rows, 4], "s": [rows, 1], "z": [rows, seq]}
    for name, want in ref.items():
        dt, shape, data = got[name]
        check(dt == "FP32" and shape == shapes[name], "%s %s: %s %s" % (what, name, dt, shape))
        check(same_bits(data, want.flatten()), "%s %s: values differ from the reference" % (what, name))


def test_metadata(base):
    with urllib.request.urlopen(base + "/v2/models/multi", timeout=30) as r:
        m = json.loads(r.read())
    check(m["platform"] == "onnx", "platform %s" % m.get("platform"))
    check(m["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]},
                          {"name": "ids", "datatype": "INT64", "shape": [-1, -1]}], "inputs %s" % m["inputs"])
    check([o["name"] for o in m["outputs"]] == ["y", "s", "z"] and m["outputs"][2]["shape"] == [-1, -1],
          "outputs %s" % m["outputs"])


def test_answers(url):
    for rows, seq, seed in ((1, 1, 1), (3, 5, 2), (8, 16, 3)):
        x, ids = inputs(rows, seq, seed)
        ref = reference(x, ids)
        compare("JSON %dx%d" % (rows, seq), infer_json(url, x, ids), ref, rows, seq)
        compare("binary %dx%d" % (rows, seq), infer_binary(url, x, ids), ref, rows, seq)
    x, ids = inputs(2, 3, 4)
    status, _, body = post(url, json_body(x, ids, [{"name": "s"}]))
    out = json.loads(body)["outputs"] if status == 200 else []
    check(status == 200 and [o["name"] for o in out] == ["s"], "outputs selection: %d %s" % (status, body[:200]))


def test_mixed_shapes(url):
    """Requests of three sequence lengths at once: each answer is its own (they batch apart)."""
    results, threads = {}, []

    def one(i):
        rows, seq = 1 + i % 2, (3, 5, 7)[i % 3]
        x, ids = inputs(rows, seq, 100 + i)
        results[i] = (infer_json(url, x, ids), reference(x, ids), rows, seq)

    for i in range(24):
        threads.append(threading.Thread(target=one, args=(i,)))
        threads[-1].start()
    for t in threads:
        t.join()
    for i, (got, ref, rows, seq) in sorted(results.items()):
        compare("mixed request %d" % i, got, ref, rows, seq)
    check(len(results) == 24, "%d of 24 mixed requests answered" % len(results))


def test_refusals(url):
    x, ids = inputs(2, 3, 5)
    xi = {"name": "x", "datatype": "FP32", "shape": [2, 4], "data": x.flatten().tolist()}
    ii = {"name": "ids", "datatype": "INT64", "shape": [2, 3], "data": ids.flatten().tolist()}
    cases = [
        ({"inputs": [xi, xi]}, "input 'x' is given twice"),
        ({"inputs": [xi]}, "missing input 'ids'"),
        ({"inputs": [xi, dict(ii, name="tokens")]}, "unknown input 'tokens'"),
        ({"inputs": [xi, dict(ii, datatype="INT32")]}, "datatype 'INT32' does not match the model's 'INT64'"),
        ({"inputs": [xi, dict(ii, shape=[2, 17], data=[1] * 34)]}, "input 'ids' dim 1 is 17, the model's maximum is 16"),
        ({"inputs": [xi, dict(ii, shape=[1, 3], data=[1, 2, 3])]}, "batch size 1 disagrees"),
        ({"inputs": [xi, dict(ii, data=[[1, 2], [3, 4], [5, 6]])]}, "data nested at depth 1 has 3 elements, shape[0] is 2"),
        ({"inputs": [xi, dict(ii, data=[1, 2, 3, 4, 5, 6.5])]}, "data element 5 is not an integer"),
        ({"inputs": [xi, ii], "outputs": [{"name": "y"}, {"name": "y"}]}, "output 'y' is requested twice"),
        ({"inputs": [xi, ii], "outputs": [{"name": "w"}]}, "unknown output 'w'"),
    ]
    for body, want in cases:
        status, _, answer = post(url, json.dumps(body).encode())
        check(status == 400 and want in answer.decode(errors="replace"),
              "refusal %r: %d %s" % (want, status, answer[:200]))
    status, _, answer = post(url, b"")
    check(status == 400 and b"empty request body" in answer, "empty body: %d %s" % (status, answer[:200]))


def parse_inferctl(text):
    """inferctl's answer: 'output NAME DTYPE [shape]' then 'row R: v v ...' lines."""
    res, cur = {}, None
    for line in text.splitlines():
        if line.startswith("output "):
            _, name, dt, shape = line.split(" ", 3)
            cur = res[name] = (dt, json.loads(shape), [])
        elif line.startswith("row ") and cur is not None:
            cur[2].extend(float(v) for v in line.split(":", 1)[1].split())
    return {k: (d, s, np.array(v, dtype=np.float32)) for k, (d, s, v) in res.items()}


def test_shm(inferctl, socket, scratch):
    for rows, seq, seed in ((1, 2, 7), (4, 9, 8)):
        x, ids = inputs(rows, seq, seed)
        np.save(scratch + "/x.npy", x)
        np.save(scratch + "/ids.npy", ids)
        p = subprocess.run([inferctl, "--socket=" + socket, "infer", "multi", "--input", "ids=" + scratch + "/ids.npy",
                            "--input", "x=" + scratch + "/x.npy"], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "inferctl: %d %s" % (p.returncode, p.stderr))
        shm = parse_inferctl(p.stdout)
        compare("shm %dx%d" % (rows, seq), shm, reference(x, ids), rows, seq)
        js = infer_json(URL, x, ids)
        for name in ("y", "s", "z"):
            check(name in shm and same_bits(shm[name][2], js[name][2]), "shm and JSON differ for %s" % name)
    np.save(scratch + "/ids.npy", np.ones((1, 17), dtype=np.int64))
    np.save(scratch + "/x.npy", np.ones((1, 4), dtype=np.float32))
    p = subprocess.run([inferctl, "--socket=" + socket, "infer", "multi", "--input", "ids=" + scratch + "/ids.npy",
                        "--input", "x=" + scratch + "/x.npy"], capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and "dim 1 is 17, the model's maximum is 16" in p.stderr,
          "shm dims over the maximum: %d %s" % (p.returncode, p.stderr))


def test_config(base, inferctl, socket):
    """Triton's /config lists every tensor with its datatype and dims (-1 variable); inferctl's
    `model` prints the same over HTTP as over shared memory."""
    with urllib.request.urlopen(base + "/v2/models/multi/config", timeout=30) as r:
        c = json.load(r)
    want_in = [{"name": "x", "data_type": "TYPE_FP32", "dims": [4], "format": "FORMAT_NONE"},
               {"name": "ids", "data_type": "TYPE_INT64", "dims": [-1], "format": "FORMAT_NONE"}]
    want_out = [{"name": "y", "data_type": "TYPE_FP32", "dims": [4]},
                {"name": "s", "data_type": "TYPE_FP32", "dims": [1]},
                {"name": "z", "data_type": "TYPE_FP32", "dims": [-1]}]
    check(c.get("max_batch_size") == 8 and c.get("platform") == "onnx", "config header: %r" % c)
    check(c.get("input") == want_in, "config inputs: %r" % c.get("input"))
    check(c.get("output") == want_out, "config outputs: %r" % c.get("output"))
    if inferctl is None:
        return
    shm = subprocess.run([inferctl, "--socket", socket, "model", "multi"], capture_output=True, text=True,
                         timeout=60)
    http = subprocess.run([inferctl, "--http", base[len("http://"):], "model", "multi"], capture_output=True,
                          text=True, timeout=60)
    check(shm.returncode == 0 and http.returncode == 0, "inferctl model: %s %s" % (shm.stderr, http.stderr))
    check(shm.stdout == http.stdout, "inferctl model: shm %r, HTTP %r" % (shm.stdout, http.stdout))
    check("input: ids INT64 [-1, -1]" in http.stdout and "output: z FP32 [-1, -1]" in http.stdout,
          "inferctl --http model multi: %r" % http.stdout)


if __name__ == "__main__":
    base = sys.argv[1]
    URL = base + "/v2/models/multi/infer"
    test_metadata(base)
    test_answers(URL)
    test_mixed_shapes(URL)
    test_refusals(URL)
    test_config(base, sys.argv[2] if len(sys.argv) >= 5 else None, sys.argv[3] if len(sys.argv) >= 5 else None)
    if len(sys.argv) >= 5:
        test_shm(sys.argv[2], sys.argv[3], sys.argv[4])
    print("%s: %d failure(s)" % ("FAIL" if failures else "PASS", len(failures)))
    sys.exit(1 if failures else 0)
