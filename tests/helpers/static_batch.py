#!/usr/bin/env python3
"""static_batch.py: a model exported with a fixed batch, and what a client gets from it over HTTP.

  static_batch.py make DIR    write DIR/fixed/model.onnx: x FP32 [2, 3, 4, 4] fixed (no batch axis), y = relu(x) * 3
  static_batch.py check URL   batch 2 answers y as numpy computes it; batch 1 and 3 get a 400 naming the input,
                              its dim 0, the fixed batch 2 and the re-export with a dynamic batch axis

Exits 77 when onnx or numpy cannot be imported."""
import json
import os
import sys
import urllib.error
import urllib.request

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
except ImportError as e:
    print("SKIP: python3 cannot import onnx and numpy (%s)" % e)
    sys.exit(77)

SHAPE = [2, 3, 4, 4]


def make(root):
    """The fixed-shape model, as torch.onnx.export writes one without dynamic_axes."""
    out = os.path.join(root, "fixed")
    os.makedirs(out, exist_ok=True)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "three"], ["y"])]
    graph = helper.make_graph(nodes, "fixed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"))


def infer(url, shape, x):
    """POST one request; (status, parsed body)."""
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": shape,
                                   "data": x.ravel().tolist()}]}).encode()
    req = urllib.request.Request(url + "/v2/models/fixed/infer", data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def check(url):
    """The fixed batch served, any other refused with the input, dim, size and the way out named."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    status, body = infer(url, SHAPE, x)
    assert status == 200, (status, body)
    y = np.array(body["outputs"][0]["data"], dtype=np.float32).reshape(body["outputs"][0]["shape"])
    assert list(y.shape) == SHAPE and np.array_equal(y, np.maximum(x, 0) * 3), body["outputs"][0]["shape"]
    for n in (1, 3):
        status, body = infer(url, [n] + SHAPE[1:], rng.standard_normal([n] + SHAPE[1:]).astype(np.float32))
        err = body.get("error", "")
        assert status == 400, (n, status, body)
        for want in ("input 'x' dim 0 is %d" % n, "fixed batch of 2", "dynamic_axes={\"x\": {0: \"batch\"}}"):
            assert want in err, (want, err)
    print("fixed batch 2 served; batch 1 and 3 refused:", err)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        print(__doc__)
        return 2
    (make if sys.argv[1] == "make" else check)(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
