#!/usr/bin/env python3
"""staging_client.py: drive the HTTP door's per-request staging memory (test_http_staging.sh).

  make DIR NAME WIDTH     write DIR/NAME/{model.onnx,model.json}: y = Relu(x), x and y FP32 [N, WIDTH], batch 8
  mixed PORT REF          24 clients at once, each sending 6 fashion-mlp requests of 1-64 rows (JSON and binary);
                          every answer must be 200 with the reference logits of its own rows
  relu PORT NAME WIDTH ROWS  one request of ROWS random rows to NAME; the answer must be 200 and equal numpy's relu

Exits 77 when onnx or numpy is missing.
"""
import http.client
import json
import os
import random
import struct
import sys
import threading

try:
    import numpy as np
except ImportError as e:
    print("SKIP: python3 cannot import numpy (%s)" % e)
    sys.exit(77)


def make(directory, name, width):
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError as e:
        print("SKIP: python3 cannot import onnx (%s)" % e)
        sys.exit(77)
    out = os.path.join(directory, name)
    os.makedirs(out, exist_ok=True)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": 8}, f)


def infer(port, model, name, x, binary):
    """POST one request of the FP32 rows x; (status, flat output values or the error text)."""
    rows, width = x.shape
    if binary:
        head = json.dumps({"inputs": [{"name": name, "shape": [rows, width], "datatype": "FP32",
                                       "parameters": {"binary_data_size": x.nbytes}}]}).encode()
        body = head + x.astype("<f4").tobytes()
        headers = {"Inference-Header-Content-Length": str(len(head)), "Content-Type": "application/octet-stream"}
    else:
        body = json.dumps({"inputs": [{"name": name, "shape": [rows, width], "datatype": "FP32",
                                       "data": [float(v) for v in x.reshape(-1)]}]}).encode()
        headers = {"Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v2/models/%s/infer" % model, body, headers)
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    if r.status != 200:
        return r.status, data.decode(errors="replace")
    return 200, np.array(json.loads(data)["outputs"][0]["data"], dtype=np.float64)


def mixed(port, ref_path):
    with open(ref_path) as f:
        ref = json.load(f)
    inputs = np.array(ref["inputs"], dtype=np.float32)
    logits = np.array(ref["logits"], dtype=np.float64)
    failures = []
    lock = threading.Lock()

    def client(k):
        rnd = random.Random(k)
        for i in range(6):
            rows = rnd.randint(1, 64)
            pick = [rnd.randrange(len(inputs)) for _ in range(rows)]
            st, got = infer(port, "fashion-mlp", "input", inputs[pick], binary=(k + i) % 2 == 0)
            want = logits[pick].reshape(-1)
            ok = st == 200 and got.shape == want.shape and \
                np.max(np.abs(got - want)) <= 1e-4 * max(1.0, np.max(np.abs(want)))
            if not ok:
                with lock:
                    failures.append("client %d request %d (%d rows): %s" % (k, i, rows, got if st != 200 else "wrong values"))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in failures[:10]:
        print("FAIL: " + f)
    print("mixed: %d requests, %d failed" % (24 * 6, len(failures)))
    return 1 if failures else 0


def relu(port, model, width, rows):
    x = np.random.default_rng(rows).standard_normal((rows, width)).astype(np.float32)
    st, got = infer(port, model, "x", x, binary=True)
    if st != 200:
        print("FAIL: %s, %d rows: %d %s" % (model, rows, st, got))
        return 1
    if not np.array_equal(got.astype(np.float32), np.maximum(x, 0).reshape(-1)):
        print("FAIL: %s, %d rows: not relu(x)" % (model, rows))
        return 1
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    if cmd == "mixed":
        return mixed(int(sys.argv[2]), sys.argv[3])
    if cmd == "relu":
        return relu(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    print("usage: see the docstring")
    return 2


if __name__ == "__main__":
    sys.exit(main())
