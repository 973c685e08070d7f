#!/usr/bin/env python3
"""triton_repository.py: a Triton-layout model repository (config.pbtxt beside version folders of
model.onnx) against inferd: what config.pbtxt sets is honoured, what inferd cannot honour is refused at
load naming the field, model.json's unknown members are refused naming member and file, and the load
API's config override takes Triton's quoted integers.  Answers are checked against numpy.

usage: triton_repository.py setup DIR          (writes the repository)
       triton_repository.py check URL DIR       (against a daemon in explicit mode serving DIR)"""
import json
import os
import sys
import urllib.error
import urllib.request

import numpy as np

FAILURES = []

SIMPLE = """
name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { latest: { num_versions: 1 } }
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
dynamic_batching { max_queue_delay_microseconds: 500 preferred_batch_size: [ 4 ] }
instance_group [ { count: 2 kind: KIND_CPU } ]
default_model_filename: "model.onnx"
"""

IMAGE = """
name: "image"
backend: "onnxruntime"
max_batch_size: 4
input [ { name: "data" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 4, 4 ] } ]
output [ { name: "prob" data_type: TYPE_FP32 dims: [ 5 ] label_filename: "labels.txt" } ]
"""


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def save_simple(path):
    import onnx
    from onnx import TensorProto as T, helper
    io = [helper.make_tensor_value_info(n, T.INT32, ["batch", 16]) for n in ("INPUT0", "INPUT1", "OUTPUT0", "OUTPUT1")]
    g = helper.make_graph([helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
                           helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])], "simple", io[:2], io[2:])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def save_image(path):
    """[N,3,4,4] -> softmax of a fixed [48,5] projection: an image classifier in miniature."""
    import onnx
    from onnx import TensorProto as T, helper, numpy_helper
    w = np.random.RandomState(7).randn(48, 5).astype(np.float32)
    g = helper.make_graph([helper.make_node("Flatten", ["data"], ["flat"], axis=1),
                           helper.make_node("MatMul", ["flat", "w"], ["logits"]),
                           helper.make_node("Softmax", ["logits"], ["prob"], axis=1)], "image",
                          [helper.make_tensor_value_info("data", T.FLOAT, ["batch", 3, 4, 4])],
                          [helper.make_tensor_value_info("prob", T.FLOAT, ["batch", 5])],
                          [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def folder(root, name, pbtxt=None, model_json=None, onnx_saver=save_simple, extra=None):
    os.makedirs(os.path.join(root, name, "1"))
    onnx_saver(os.path.join(root, name, "1", "model.onnx"))
    if pbtxt is not None:
        open(os.path.join(root, name, "config.pbtxt"), "w").write(pbtxt.replace('"simple"', '"%s"' % name))
    if model_json is not None:
        json.dump(model_json, open(os.path.join(root, name, "model.json"), "w"))
    for fname, text in (extra or {}).items():
        open(os.path.join(root, name, fname), "w").write(text)


# Folders refused at load, and what the refusal must say.
REFUSED = {
    "unknown_field": (SIMPLE + "sequence_batching { }\n", None, ["config.pbtxt", "sequence_batching"]),
    "unknown_input_member": (SIMPLE.replace("dims: [ 16 ] },", "dims: [ 16 ] reshape: { shape: [ 16 ] } },", 1),
                             None, ["config.pbtxt", "reshape"]),
    "other_platform": (SIMPLE.replace("onnxruntime_onnx", "tensorrt_plan"), None, ["platform", "tensorrt_plan"]),
    "kind_model": (SIMPLE.replace("KIND_CPU", "KIND_MODEL"), None, ["instance_group[0]", "KIND_MODEL"]),
    "other_file": (SIMPLE.replace('"model.onnx"', '"model.plan"'), None, ["default_model_filename"]),
    "conflict": (SIMPLE, {"max_batch_size": 4}, ["max_batch_size", "differently"]),
    "json_member": (None, {"inputs": [{"name": "INPUT0", "datatype": "INT32", "dims": [16], "colour": "red"}]},
                    ["model.json", "inputs[0]", "colour"]),
    "format_rank": (SIMPLE.replace("dims: [ 16 ] },", "format: FORMAT_NHWC dims: [ 16 ] },", 1), None,
                    ["FORMAT_NHWC", "3 dims"]),
}


def setup(root):
    folder(root, "simple", SIMPLE)
    # Versions 1 and 2 on disk; config.pbtxt's policy serves version 1 only.
    folder(root, "pinned", SIMPLE.replace("latest: { num_versions: 1 }", "specific: { versions: [ 1 ] }"))
    os.makedirs(os.path.join(root, "pinned", "2"))
    save_simple(os.path.join(root, "pinned", "2", "model.onnx"))
    folder(root, "image", IMAGE, onnx_saver=save_image, extra={"labels.txt": "cat\ndog\nfox\nowl\nbee\n"})
    for name, (pbtxt, mj, _) in REFUSED.items():
        folder(root, name, pbtxt, mj)


def call(url, method="GET", body=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def load(url, name, config=None):
    return call(url + "/v2/repository/models/%s/load" % name, "POST",
                {"parameters": {"config": config}} if config is not None else {})


def infer_simple(url, rows):
    a = np.arange(rows * 16, dtype=np.int32).reshape(rows, 16)
    b = np.full((rows, 16), 3, dtype=np.int32)
    body = {"inputs": [{"name": "INPUT0", "shape": [rows, 16], "datatype": "INT32", "data": a.ravel().tolist()},
                       {"name": "INPUT1", "shape": [rows, 16], "datatype": "INT32", "data": b.ravel().tolist()}]}
    st, r = call(url + "/v2/models/simple/infer", "POST", body)
    if st != 200:
        return st, r
    out = {o["name"]: np.array(o["data"]).reshape(o["shape"]) for o in r["outputs"]}
    check((out["OUTPUT0"] == a + b).all() and (out["OUTPUT1"] == a - b).all(), "simple answers: %s" % r)
    return st, r


def check_simple(url):
    st, r = load(url, "simple")
    check(st == 200, "load simple: %d %s" % (st, r))
    st, c = call(url + "/v2/models/simple/config")
    check(st == 200 and c["max_batch_size"] == 8 and c["dynamic_batching"]["preferred_batch_size"] == [4]
          and c["dynamic_batching"]["max_queue_delay_microseconds"] == 500
          and [i["name"] for i in c["input"]] == ["INPUT0", "INPUT1"]
          and all(i["data_type"] == "TYPE_INT32" and i["dims"] == [16] for i in c["input"])
          and c.get("instance_group") == [{"count": 2, "kind": "KIND_CPU"}],
          "config.pbtxt honoured in /config: %s" % c)
    infer_simple(url, 8)
    st, r = infer_simple(url, 9)
    check(st == 400 and "8" in json.dumps(r), "9 rows past config.pbtxt's max_batch_size 8: %d %s" % (st, r))


def check_policy(url):
    st, r = load(url, "pinned")
    st2, meta = call(url + "/v2/models/pinned")
    st3, _ = call(url + "/v2/models/pinned/versions/2")
    check(st == 200 and st2 == 200 and meta.get("versions") == ["1"] and st3 == 404,
          "config.pbtxt version_policy specific [1]: %d %s %s %d" % (st, r, meta, st3))


def check_image(url):
    st, r = load(url, "image")
    check(st == 200, "load image: %d %s" % (st, r))
    st, c = call(url + "/v2/models/image/config")
    check(st == 200 and c["input"][0]["format"] == "FORMAT_NCHW" and c["max_batch_size"] == 4
          and c["output"][0].get("labels") == ["cat", "dog", "fox", "owl", "bee"],
          "image /config (format, labels from label_filename): %s" % c)


def image_reference(root, x):
    """The image model's probabilities from onnxruntime, the independent reference."""
    import onnxruntime
    sess = onnxruntime.InferenceSession(os.path.join(root, "image", "1", "model.onnx"),
                                        providers=["CPUExecutionProvider"])
    return sess.run(None, {"data": x})[0]


def check_classification(url, root):
    """classification k on the labelled output, JSON and (through tritonclient) binary: per row the top k
    as "value:index:label", checked against onnxruntime's probabilities."""
    labels = ["cat", "dog", "fox", "owl", "bee"]
    x = np.random.RandomState(3).randn(3, 3, 4, 4).astype(np.float32)
    ref = image_reference(root, x)
    want = [["%f:%d:%s" % (ref[r][i], i, labels[i]) for i in np.argsort(-ref[r], kind="stable")[:2]]
            for r in range(3)]
    body = {"inputs": [{"name": "data", "shape": [3, 3, 4, 4], "datatype": "FP32", "data": x.ravel().tolist()}],
            "outputs": [{"name": "prob", "parameters": {"classification": 2}}]}
    st, r = call(url + "/v2/models/image/infer", "POST", body)
    got = r["outputs"][0]["data"] if st == 200 else r
    same = lambda g, w: g.split(":")[1:] == w.split(":")[1:] and abs(float(g.split(":")[0]) - float(w.split(":")[0])) < 1e-5
    check(st == 200 and r["outputs"][0]["datatype"] == "BYTES" and r["outputs"][0]["shape"] == [3, 2]
          and all(same(g, w) for g, w in zip(got, sum(want, []))), "JSON classification %s, want %s" % (got, want))
    try:
        import tritonclient.http as tc
    except ImportError:
        print("tritonclient absent: binary classification not checked")
        return
    client = tc.InferenceServerClient(url[len("http://"):])
    inp = tc.InferInput("data", [3, 3, 4, 4], "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    res = client.infer("image", [inp], outputs=[tc.InferRequestedOutput("prob", binary_data=True, class_count=2)])
    got = [[v.decode() for v in row] for row in res.as_numpy("prob")]
    check(len(got) == 3 and all(same(g, w) for gr, wr in zip(got, want) for g, w in zip(gr, wr)),
          "binary classification %s, want %s" % (got, want))
    client.close()


def check_refused(url):
    for name, (_, _, words) in REFUSED.items():
        st, r = load(url, name)
        msg = json.dumps(r)
        check(st == 400 and "failed to load" in msg and all(w in msg for w in words),
              "%s: refused naming %s: %d %s" % (name, words, st, msg))


def check_override(url):
    """Triton's model-control example: a malformed override fails, a quoted integer works, and the failed
    reload leaves one index row for version 1."""
    st, r = load(url, "simple", '"parameters": {"config": {{"max_batch_size": "16"}}}')
    check(st == 400 and "failed to load" in r.get("error", ""), "malformed override: %d %s" % (st, r))
    st, idx = call(url + "/v2/repository/index", "POST", {})
    rows = [(e["name"], e.get("version")) for e in idx if e["name"] == "simple"]
    check(rows == [("simple", "1")], "index after a failed reload: %s" % idx)
    st, r = load(url, "simple", '{"max_batch_size":"16", "dynamic_batching": {"preferred_batch_size": ["4"]}}')
    check(st == 200, "quoted override: %d %s" % (st, r))
    st, c = call(url + "/v2/models/simple/config")
    check(c.get("max_batch_size") == 16, "max_batch_size after the override: %s" % c)
    infer_simple(url, 16)
    # Triton's ModelConfig JSON (its own key names, quoted integers) as well as model.json's keys.
    st, r = load(url, "simple", json.dumps({"max_batch_size": 4, "dynamic_batching": {
        "preferred_batch_size": [2], "max_queue_delay_microseconds": "300"}}))
    st2, c = call(url + "/v2/models/simple/config")
    b = c.get("dynamic_batching", {})
    check(st == 200 and c.get("max_batch_size") == 4 and b.get("preferred_batch_size") == [2]
          and b.get("max_queue_delay_microseconds") == 300, "ModelConfig JSON override: %d %s %s" % (st, r, c))
    st, r = load(url, "simple", json.dumps({"dynamic_batching": {"preferred_batch_size": [2]}, "labels": ["a"]}))
    check(st == 400 and "mixes" in r.get("error", "") and "preferred_batch_size" in r["error"]
          and "labels" in r["error"], "mixed override refused naming both: %d %s" % (st, r))
    st, r = load(url, "simple", json.dumps({"backend": "onnxruntime", "sequence_batching": {}}))
    check(st == 400 and "sequence_batching" in r.get("error", ""), "unknown ModelConfig field: %d %s" % (st, r))
    st, r = load(url, "wrong_model_name")
    check(st == 400 and "failed to load" in r.get("error", ""), "unknown model load: %d %s" % (st, r))


def main():
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
        return
    url = sys.argv[2]
    check_simple(url)
    check_image(url)
    check_policy(url)
    check_classification(url, sys.argv[3])
    check_refused(url)
    check_override(url)
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
