#!/usr/bin/env python3
"""make_file_change_models.py REPO STAGE: the models and replacement files of test_file_change.sh.

REPO/fashion-mlp must hold the layer-format model (model.json, model.safetensors).  Writes:
  STAGE/fashion-mlp/new.safetensors, new2.safetensors  the same tensors, other values
  REPO/onnx-ext/{model.onnx, weights.bin, model.json}  an MLP whose weights are ONNX external data
  STAGE/onnx-ext/weights.bin                           other weights at the same offsets
  REPO/onnx-inline/{model.onnx, model.json}            the same MLP with its weights inside model.onnx
  STAGE/onnx-inline/model.onnx                         other weights
  STAGE/inputs.json    per model: its input's name and the one row every request sends
  STAGE/expect.json    per model and file generation (old, new, new2): that row's outputs, from numpy
The ONNX models come only when python3 can import onnx (STAGE/inputs.json then names fashion-mlp alone).
Every batch of the models is one row (max_batch_size 1), so a model answers a row with the same bits each time.
"""
import json
import os
import struct
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

IN_ONNX, HIDDEN, OUT_ONNX = 64, 256, 8   # W1 alone is 64 KiB: a truncation leaves most of it past the end


def read_safetensors(path):
    """The header (dict) and each tensor as a float32 array."""
    raw = open(path, "rb").read()
    hlen = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + hlen])
    data = raw[8 + hlen:]
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", t
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"])
    return raw[:8 + hlen], header, tensors


def write_safetensors(path, head, header, tensors):
    """The same header (so the same size and offsets) with other values."""
    data = bytearray(sum(t["data_offsets"][1] - t["data_offsets"][0] for n, t in header.items()
                         if n != "__metadata__"))
    for name, t in header.items():
        if name != "__metadata__":
            b, e = t["data_offsets"]
            data[b:e] = tensors[name].astype("<f4").tobytes()
    with open(path, "wb") as f:
        f.write(head + bytes(data))


def mlp_forward(t, x):
    """The layer format's fashion-mlp: three linear layers, ReLU between them."""
    h = np.maximum(x @ t["fc1.weight"].astype(np.float64).T + t["fc1.bias"], 0)
    h = np.maximum(h @ t["fc2.weight"].astype(np.float64).T + t["fc2.bias"], 0)
    return h @ t["fc3.weight"].astype(np.float64).T + t["fc3.bias"]


def make_mlp(repo, stage, expect, inputs):
    """New weights for fashion-mlp (scaled and shifted) and the answers of each."""
    src = os.path.join(repo, "fashion-mlp", "model.safetensors")
    head, header, old = read_safetensors(src)
    x = np.array([((i * 7919) % 256) / 255.0 for i in range(784)], dtype=np.float32).astype(np.float64)
    inputs["fashion-mlp"] = {"input": "input", "row": x.astype(np.float32).tolist()}
    os.makedirs(os.path.join(stage, "fashion-mlp"), exist_ok=True)
    gens = {"old": old,
            "new": {n: (v * 1.25 + 0.01).astype(np.float32) for n, v in old.items()},
            "new2": {n: (v * 0.75 - 0.02).astype(np.float32) for n, v in old.items()}}
    for name in ("new", "new2"):
        write_safetensors(os.path.join(stage, "fashion-mlp", name + ".safetensors"), head, header, gens[name])
    expect["fashion-mlp"] = {g: mlp_forward(t, x).tolist() for g, t in gens.items()}


def onnx_weights(seed):
    rng = np.random.default_rng(seed)
    return {"w1": rng.standard_normal((IN_ONNX, HIDDEN)).astype(np.float32) / 8,
            "b1": rng.standard_normal(HIDDEN).astype(np.float32) / 8,
            "w2": rng.standard_normal((HIDDEN, OUT_ONNX)).astype(np.float32) / 16,
            "b2": rng.standard_normal(OUT_ONNX).astype(np.float32) / 8}


def onnx_model(w):
    """y = relu(x W1 + b1) W2 + b2, x [N, 64], y [N, 8]."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
             helper.make_node("Add", ["h3", "b2"], ["y"], name="add2")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", IN_ONNX])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", OUT_ONNX])],
                              [numpy_helper.from_array(v, n) for n, v in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # newer onnx writes an IR version older onnxruntime releases refuse
    onnx.checker.check_model(model)
    return model


def onnx_forward(w, x):
    h = np.maximum(x @ w["w1"].astype(np.float64) + w["b1"], 0)
    return h @ w["w2"].astype(np.float64) + w["b2"]


def save_onnx(dirname, w, external):
    os.makedirs(dirname, exist_ok=True)
    path = os.path.join(dirname, "model.onnx")
    if external:
        onnx.save(onnx_model(w), path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location="weights.bin", size_threshold=0)
    else:
        onnx.save(onnx_model(w), path)
    with open(os.path.join(dirname, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": 1}, f)


def make_onnx(repo, stage, expect, inputs):
    """onnx-ext and onnx-inline, each with a second set of weights in STAGE."""
    x = np.array([((i * 37) % 17 - 8) / 8.0 for i in range(IN_ONNX)], dtype=np.float64)
    old, new = onnx_weights(1), onnx_weights(2)
    for name, external in (("onnx-ext", True), ("onnx-inline", False)):
        save_onnx(os.path.join(repo, name), old, external)
        save_onnx(os.path.join(stage, name), new, external)
        inputs[name] = {"input": "x", "row": x.tolist()}
        expect[name] = {"old": onnx_forward(old, x).tolist(), "new": onnx_forward(new, x).tolist()}
    # The new weights.bin must fit the served model.onnx: the same offsets and lengths.
    same = open(os.path.join(repo, "onnx-ext", "model.onnx"), "rb").read() == \
        open(os.path.join(stage, "onnx-ext", "model.onnx"), "rb").read()
    assert same, "the two external-data models differ beyond weights.bin"
    os.remove(os.path.join(stage, "onnx-ext", "model.onnx"))


def main():
    repo, stage = sys.argv[1], sys.argv[2]
    expect, inputs = {}, {}
    make_mlp(repo, stage, expect, inputs)
    if onnx is not None:
        make_onnx(repo, stage, expect, inputs)
    else:
        print("python3 cannot import onnx: the ONNX models are left out")
    json.dump(expect, open(os.path.join(stage, "expect.json"), "w"))
    json.dump(inputs, open(os.path.join(stage, "inputs.json"), "w"))


if __name__ == "__main__":
    main()
