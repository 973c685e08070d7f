#!/usr/bin/python3
"""http_client.py: drives inferd's KServe v2 HTTP API for tests/integration/test_http.sh (stdlib only).

Subcommands:
  setup-repo DIR MODEL_DIR   write the test repository: fashion-mlp, fashion-slow (the same
                             weights, a 500 ms batching delay) and broken (fails to load)
  endpoints --url URL --example FILE
                             every endpoint, every error status, hostile bodies, metrics,
                             100 mixed and 64 well-formed concurrent requests
  small-body --url URL --example FILE
                             a daemon started with --max_body_bytes=4096: 413 before buffering
  shutdown --url URL --pid PID --example FILE
                             SIGTERM with requests in flight: they all finish, readiness drops
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

FAILURES = []
SLOW_DELAY_US = 500000


def check(cond, what):
    """Record a failed check without stopping."""
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


class Server:
    """One daemon under test, reached over fresh connections."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.lock = threading.Lock()
        self.sent = 0       # requests whose headers reached the daemon
        self.errors = 0     # of those, answered with a status >= 400

    def count(self, status):
        """Count one request the daemon saw, and its answer."""
        with self.lock:
            self.sent += 1
            self.errors += status >= 400

    def request(self, method, path, body=None, headers=None, timeout=60):
        """Send one request; returns (status, headers, body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            hdrs = dict(headers or {})
            if body is not None and not isinstance(body, (bytes, str)):
                conn.request(method, path, body=body, headers=hdrs, encode_chunked=True)
            else:
                conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            self.count(r.status)
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None):
        """Send one request and decode its JSON answer (None when it is not JSON)."""
        status, hdrs, data = self.request(method, path, body, headers)
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = None
        return status, hdrs, doc

    def raw(self, data, abandon=False, timeout=30):
        """Send raw bytes on a socket and read until the server closes or the answer is whole;
        abandon: close at once, as a client that goes away mid-request (not counted: the
        caller knows whether the daemon saw the request)."""
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            s.sendall(data)
            if abandon:
                return b""
            out = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                out += chunk
                head, sep, rest = out.partition(b"\r\n\r\n")
                if sep:
                    for line in head.split(b"\r\n")[1:]:
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length" and len(rest) >= int(v):
                            return out
            return out
        finally:
            s.close()

    def metrics(self):
        """GET /metrics as {series: value}."""
        status, hdrs, data = self.request("GET", "/metrics")
        check(status == 200, "/metrics answers 200 (got %d)" % status)
        check(hdrs.get("content-type") == "text/plain; version=0.0.4",
              "/metrics content type is %r" % hdrs.get("content-type"))
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def alive(self):
        """Whether the daemon still answers /v2/health/live."""
        try:
            return self.request("GET", "/v2/health/live", timeout=10)[0] == 200
        except OSError:
            return False


def status_of(raw):
    """The status code of a raw HTTP answer (0 when there is none)."""
    try:
        return int(raw.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def argmax(v):
    return max(range(len(v)), key=lambda i: v[i])


def setup_repo(target, model_dir):
    """Write the three test models."""
    with open(os.path.join(model_dir, "model.json")) as f:
        spec = json.load(f)
    for name, change in (("fashion-mlp", {}),
                         ("fashion-slow", {"dynamic_batching": {
                             "max_queue_delay_us": SLOW_DELAY_US, "max_queue_size": 4096,
                             "default_timeout_us": 10000000, "eager_dispatch": False}})):
        d = os.path.join(target, name)
        os.makedirs(d)
        m = dict(spec, name=name, **change)
        with open(os.path.join(d, "model.json"), "w") as f:
            json.dump(m, f)
        weights = m.get("weights", "model.safetensors")
        os.symlink(os.path.join(os.path.abspath(model_dir), weights), os.path.join(d, weights))
    d = os.path.join(target, "broken")
    os.makedirs(d)
    bad = dict(spec, name="broken", layers=[{"name": "fc1", "op": "no-such-op"}])
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(bad, f)
    os.symlink(os.path.join(os.path.abspath(model_dir), spec.get("weights", "model.safetensors")),
               os.path.join(d, spec.get("weights", "model.safetensors")))


def load_example(path):
    with open(path, "rb") as f:
        return f.read()


def expect_error(srv, method, path, body, status, words, headers=None):
    """One request that must fail with status and a JSON error naming every word."""
    got, hdrs, doc = srv.json(method, path, body, headers)
    err = doc.get("error") if isinstance(doc, dict) else None
    ok = check(got == status, "%s %s: status %d, expected %d (%r)" % (method, path, got, status, err))
    ok &= check(hdrs.get("content-type") == "application/json" and isinstance(err, str),
                "%s %s: error body is not {\"error\": ...}: %r" % (method, path, doc))
    for w in words:
        ok &= check(isinstance(err, str) and w.lower() in err.lower(),
                    "%s %s: error %r does not mention %r" % (method, path, err, w))
    return hdrs, err


def unencodable(status, doc):
    """A 500 for a request that ran but whose output JSON cannot carry (an infinity the inputs overflowed to)."""
    err = doc.get("error", "") if isinstance(doc, dict) else ""
    return status == 500 and "has no JSON form" in err


def account(tally, status, doc, rows=1):
    """Book an answer to a fashion-mlp inference the way the daemon's counters see it."""
    err = doc.get("error", "") if isinstance(doc, dict) else ""
    if status == 200 or unencodable(status, doc):
        # Decoded and run: the batcher counted a success; its output may not fit JSON.
        tally["success"] += 1
        tally["rows"] += rows
    elif status == 400:
        tally["invalid"] += 1


def infer_ok(srv, path, body, tally=None, rows=1):
    """One inference that must succeed; returns (logits rows, answer)."""
    status, _, doc = srv.json("POST", path, body, {"Content-Type": "application/json"})
    if not check(status == 200 and isinstance(doc, dict), "POST %s: status %d: %r" % (path, status, doc)):
        return None
    out = doc["outputs"][0]
    check(out["name"] == "logits" and out["datatype"] == "FP32" and out["shape"] == [rows, 10]
          and len(out["data"]) == rows * 10, "POST %s: output tensor %r" % (path, out.get("shape")))
    if tally is not None:
        account(tally, status, doc, rows)
    return [out["data"][i * 10:(i + 1) * 10] for i in range(rows)], doc


def test_health_and_metadata(srv):
    status, hdrs, doc = srv.json("GET", "/v2/health/live")
    check(status == 200 and doc == {"live": True}, "live: %d %r" % (status, doc))
    status, hdrs, data = srv.request("HEAD", "/v2/health/live")
    check(status == 200 and data == b"", "HEAD live: %d %r" % (status, data))
    status, _, doc = srv.json("GET", "/v2/health/ready")
    check(status == 200 and doc == {"ready": True}, "ready: %d %r" % (status, doc))
    status, _, doc = srv.json("GET", "/v2")
    # What works here: CUDA regions only where a GPU backend runs.
    exts = ["binary_tensor_data", "statistics", "model_repository", "model_configuration", "classification",
            "system_shared_memory"]
    if os.environ.get("INFERD_TEST_DEVICE", "cpu").startswith("cuda"):
        exts.append("cuda_shared_memory")
    check(status == 200 and doc.get("name") == "inferd" and isinstance(doc.get("version"), str)
          and doc.get("extensions") == exts, "server metadata: %r" % doc)
    status, _, doc = srv.json("GET", "/v2/models/fashion-mlp")
    check(status == 200 and doc == {"name": "fashion-mlp", "versions": ["1"], "platform": "inferd_mlp",
                                    "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 784]}],
                                    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}]},
          "model metadata: %r" % doc)
    for path in ("/v2/models/fashion-mlp/ready", "/v2/models/fashion-mlp/versions/1/ready"):
        status, _, doc = srv.json("GET", path)
        check(status == 200 and doc == {"ready": True}, "%s: %d %r" % (path, status, doc))
    status, _, doc = srv.json("GET", "/v2/models/fashion-mlp/versions/1")
    check(status == 200 and doc.get("name") == "fashion-mlp", "versioned metadata: %d" % status)
    status, _, doc = srv.json("GET", "/v2/models")
    states = {m["name"]: m["state"] for m in doc} if isinstance(doc, list) else {}
    check(status == 200 and states == {"fashion-mlp": "READY", "fashion-slow": "READY", "broken": "UNAVAILABLE"},
          "model index: %r" % doc)
    status, _, doc2 = srv.json("POST", "/v2/repository/index", b"")
    check(status == 200 and doc2 == doc, "repository index: %d %r" % (status, doc2))


def test_errors(srv, example, tally):
    """Every error status with a message that names the problem."""
    e = lambda *a, **k: expect_error(srv, *a, **k)
    infer = "/v2/models/fashion-mlp/infer"
    req = json.loads(example)
    row = req["inputs"][0]["data"]

    def body(**inp):
        return json.dumps({"inputs": [dict(req["inputs"][0], **inp)]})

    e("GET", "/nope", None, 404, ["unknown path", "/nope"])
    # Triton's wording, which its clients and examples test for, then inferd's detail.
    e("GET", "/v2/models/nope", None, 404, ["Request for unknown model: 'nope' is not found"])
    e("GET", "/v2/models/nope/ready", None, 404, ["Request for unknown model: 'nope' is not found"])
    e("GET", "/v2/models/" + "x" * 300, None, 404, ["unknown model"])
    e("GET", "/v2/models/fashion-mlp/versions/2", None, 404,
      ["Request for unknown model: 'fashion-mlp' version 2 is not found", "no such version"])
    e("GET", "/v2/models/fashion-mlp/bogus", None, 404, ["unknown path"])
    e("POST", "/v2/models/nope/infer", example, 404, ["Request for unknown model: 'nope' is not found"])
    e("POST", "/infer", json.dumps(dict(req, model="nope")), 404, ["unknown model"])
    e("GET", "/v2/models/broken", None, 503, ["broken", "failed to load", "no-such-op"])
    e("GET", "/v2/models/broken/ready", None, 400,
      ["Request for unknown model: 'broken' has no available versions", "not ready", "failed to load"])
    e("POST", "/v2/models/broken/infer", example, 503, ["failed to load"])
    hdrs, _ = e("GET", infer, None, 405, ["not allowed"])
    check(hdrs.get("allow") == "POST", "405 Allow header: %r" % hdrs.get("allow"))
    hdrs, _ = e("POST", "/v2/health/live", b"{}", 405, ["not allowed"])
    check(hdrs.get("allow") == "GET, HEAD", "405 Allow header: %r" % hdrs.get("allow"))
    e("DELETE", "/metrics", None, 405, ["DELETE"])
    invalid = [
        (b'{"inputs": [', ["malformed JSON", "line 1, column 12"]),
        (b"", ["malformed JSON"]),
        (b'{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[NaN]}]}', ["malformed JSON"]),
        (b'{\n"inputs": [1,\n]}', ["malformed JSON", "line 3"]),
        (b'{"id":"\xff"}', ["malformed JSON"]),
        (b"[1]", ["JSON object"]),
        (b"{}", ["missing field 'inputs'"]),
        (b'{"inputs":{}}', ["'inputs' must be an array"]),
        (json.dumps({"inputs": [req["inputs"][0], req["inputs"][0]]}), ["1 input"]),
        (body(name="pixels"), ["unknown input 'pixels'"]),
        (body(name=7), ["'name' must be a string"]),
        (body(datatype="INT8"), ["datatype 'INT8'"]),
        (body(datatype=None), ["'datatype' must be a string"]),
        (body(shape=[1, 783]), ["shape[1] is 783", "784"]),
        (body(shape=[784]), ["shape has 1 dimensions"]),
        (body(shape=[0, 784]), ["batch size 0", "1 to 256"]),
        (body(shape=[257, 784]), ["batch size 257"]),
        (body(shape="1x784"), ["'shape' must be an array"]),
        (body(data=row[:-1]), ["783 elements", "784"]),
        (body(data=row + [0]), ["more than the 784"]),
        (body(data=row[:-1] + ["1"]), ["element 783 is not a number"]),
        (body(data=[[[x] for x in row]]), ["nested deeper"]),
        (body(data=row[:-1] + [1e39]), ["out of the FP32 range"]),
        (json.dumps(dict(req, id=5)), ["'id' must be a string"]),
        (json.dumps(dict(req, parameters={"timeout_us": "soon"})), ["timeout_us"]),
        (json.dumps(dict(req, outputs=[{"name": "probs"}])), ["unknown output 'probs'"]),
        (json.dumps(dict(req, outputs=[{"name": "logits", "parameters": {"binary_data": 1}}])),
         ["'binary_data' must be true or false"]),
        (json.dumps({"inputs": [{"name": "input", "shape": [1, 784], "datatype": "FP32",
                                 "parameters": {"binary_data_size": 3136}}]}),
         ["binary_data_size without", "Inference-Header-Content-Length"]),
    ]
    for b, words in invalid:
        e("POST", infer, b, 400, words)
        tally["invalid"] += 1
    e("POST", "/infer", example, 400, ["missing field 'model'"])
    # A timeout shorter than the batching delay expires in the queue: 503, as Triton answers it.
    # fashion-slow waits out its window (no eager dispatch); fashion-mlp would run it at once.
    e("POST", "/v2/models/fashion-slow/infer", json.dumps(dict(req, parameters={"timeout_us": 1})), 503,
      ["timed out"])
    tally["timeout_slow"] += 1
    tally["rows"] += 1      # decoded into its slot before it expired


def test_inference(srv, example, tally):
    """The demo answer through both paths, nested rows, batches, the echoed id."""
    req = json.loads(example)
    row = req["inputs"][0]["data"]
    got = infer_ok(srv, "/v2/models/fashion-mlp/infer", example, tally)
    if got is None:
        return
    (logits,), doc = got
    check(argmax(logits) == 9, "fashion example: class %d, expected 9 (Ankle boot)" % argmax(logits))
    check(doc.get("id") == req["id"] and doc.get("model_name") == "fashion-mlp"
          and doc.get("model_version") == "1", "answer header: %r" % {k: doc.get(k) for k in ("id", "model_name")})
    short = infer_ok(srv, "/infer", json.dumps(dict(req, model="fashion-mlp")), tally)
    check(short is not None and short[0][0] == logits, "POST /infer gives the same logits")
    ver = infer_ok(srv, "/v2/models/fashion-mlp/versions/1/infer", json.dumps(
        {"inputs": [dict(req["inputs"][0], data=[row])], "outputs": [{"name": "logits"}],
         "parameters": {"timeout_us": 5000000}}), tally)
    check(ver is not None and ver[0][0] == logits and "id" not in ver[1], "nested data, no id echoed")
    rows = [row, [0.0] * 784, [1.0 - x for x in row]]
    batch = infer_ok(srv, "/v2/models/fashion-mlp/infer", json.dumps(
        {"id": "b" * 100000, "inputs": [dict(req["inputs"][0], shape=[3, 784], data=rows)]}), tally, rows=3)
    if check(batch is not None, "3-row batch"):
        check(batch[1].get("id") == "b" * 100000, "a 100 kB id is echoed")
        check(all(abs(a - b) <= 1e-4 * max(1.0, abs(b)) for a, b in zip(batch[0][0], logits)),
              "row 0 of a batch matches the single-row answer")

BIN_TYPE = "application/octet-stream"
IHCL = "Inference-Header-Content-Length"


def binary_body(header, raw=b""):
    """A binary-extension body: the JSON header, then raw; and its header length."""
    h = json.dumps(header).encode()
    return h + raw, len(h)


def binary_post(srv, path, header, raw=b"", ihcl=None):
    """POST a binary-extension body; returns (status, headers, body bytes)."""
    body, hlen = binary_body(header, raw)
    return srv.request("POST", path, body, {"Content-Type": BIN_TYPE,
                                            IHCL: str(hlen if ihcl is None else ihcl)})


def f32(values):
    """Little-endian FP32 bytes, as the extension carries tensors."""
    return struct.pack("<%df" % len(values), *values)


def split_binary(what, status, hdrs, data, rows):
    """A binary answer's JSON header and logits (as float32 rows); None when malformed."""
    if not check(status == 200, "%s: status %d: %r" % (what, status, data[:200])):
        return None
    ok = check(hdrs.get("content-type") == BIN_TYPE, "%s: content type %r" % (what, hdrs.get("content-type")))
    hlen = int(hdrs.get(IHCL.lower(), "-1"))
    ok &= check(0 < hlen <= len(data), "%s: %s %d for a %d-byte body" % (what, IHCL, hlen, len(data)))
    if not ok:
        return None
    doc = json.loads(data[:hlen])
    out = doc["outputs"][0]
    check(out["name"] == "logits" and out["shape"] == [rows, 10] and "data" not in out
          and out.get("parameters") == {"binary_data_size": rows * 40},
          "%s: output header %r" % (what, out))
    if not check(len(data) - hlen == rows * 40, "%s: %d binary bytes" % (what, len(data) - hlen)):
        return None
    flat = struct.unpack("<%df" % (rows * 10), data[hlen:])
    return doc, [list(flat[i * 10:(i + 1) * 10]) for i in range(rows)]


def as_f32(v):
    """Values rounded to float32, as the daemon holds them."""
    return list(struct.unpack("<%df" % len(v), f32(v)))


def test_binary(srv, example, tally):
    """The binary tensor extension: binary in, JSON or binary out, bit-identical to JSON; every length checked."""
    infer = "/v2/models/fashion-mlp/infer"
    req = json.loads(example)
    row = req["inputs"][0]["data"]
    got = infer_ok(srv, infer, example, tally)
    if got is None:
        return
    (logits,), _ = got
    want = as_f32(logits)
    inp = {"name": "input", "shape": [1, 784], "datatype": "FP32", "parameters": {"binary_data_size": 3136}}

    # Binary in, JSON out: the same logits as the JSON request.
    status, hdrs, data = binary_post(srv, infer, {"id": "bin-1", "inputs": [inp]}, f32(row))
    doc = json.loads(data) if status == 200 else None
    check(status == 200 and hdrs.get("content-type") == "application/json" and IHCL.lower() not in hdrs
          and doc["outputs"][0]["data"] == logits and doc.get("id") == "bin-1",
          "binary in, JSON out: %d %r" % (status, data[:200]))
    account(tally, status, doc)

    # Binary in, binary out (asked per output), bit-identical to the JSON answer.
    status, hdrs, data = binary_post(srv, infer, {"inputs": [inp], "outputs": [
        {"name": "logits", "parameters": {"binary_data": True}}]}, f32(row))
    res = split_binary("binary in, binary out", status, hdrs, data, 1)
    check(res is not None and res[1][0] == want, "binary answer differs from JSON: %r" % (res and res[1]))
    account(tally, status, {})

    # The short form, binary_data_output for every output, 3 rows in one request.
    rows = [row, [0.0] * 784, [1.0 - x for x in row]]
    status, hdrs, data = binary_post(srv, "/infer", {"model": "fashion-mlp", "parameters": {"binary_data_output": True},
                                                     "inputs": [dict(inp, shape=[3, 784],
                                                                     parameters={"binary_data_size": 3 * 3136})]},
                                     f32([x for r in rows for x in r]))
    res = split_binary("POST /infer, 3 rows, binary_data_output", status, hdrs, data, 3)
    check(res is not None and argmax(res[1][0]) == 9, "3 binary rows: %r" % (res and res[1][0]))
    account(tally, status, {}, rows=3)

    # JSON in, binary out; and binary_data false beats binary_data_output.
    status, hdrs, data = srv.request("POST", infer, json.dumps(dict(req, outputs=[
        {"name": "logits", "parameters": {"binary_data": True}}])), {"Content-Type": "application/json"})
    res = split_binary("JSON in, binary out", status, hdrs, data, 1)
    check(res is not None and res[1][0] == want, "JSON in, binary out differs")
    account(tally, status, {})
    status, hdrs, data = binary_post(srv, infer, {"parameters": {"binary_data_output": True}, "inputs": [inp],
                                                  "outputs": [{"name": "logits", "parameters": {"binary_data": False}}]},
                                     f32(row))
    check(status == 200 and hdrs.get("content-type") == "application/json"
          and json.loads(data)["outputs"][0]["data"] == logits, "binary_data false: %d %r" % (status, data[:100]))
    account(tally, status, {})
    # The extension's header on a plain JSON body (no binary section) is accepted.
    status, _, data = srv.request("POST", infer, example, {IHCL: str(len(example))})
    check(status == 200, "header over a whole JSON body: %d %r" % (status, data[:200]))
    account(tally, status, {})

    # Every length checked: each a 400 that names the problem.
    e = lambda *a, **k: expect_error(srv, *a, **k)
    hdr = lambda **p: {"inputs": [dict(inp, parameters=dict({"binary_data_size": 3136}, **p))]}
    cases = [
        (hdr(), f32(row), "99999", ["exceeds the body's"]),
        (hdr(), f32(row), "abc", ["must be a byte count"]),
        (hdr(), f32(row), "0", ["is 0"]),
        (hdr(), f32(row), "-5", ["must be a byte count"]),
        (hdr(binary_data_size=3132), f32(row), None, ["binary_data_size is 3132", "3136 bytes"]),
        (hdr(binary_data_size=6272), f32(row) * 2, None, ["binary_data_size is 6272"]),
        (hdr(), f32(row[:-1]), None, ["binary data is missing", "3132 left"]),
        (hdr(), b"", None, ["binary data is missing", "0 left"]),
        (hdr(), f32(row) + b"\0", None, ["1 bytes of binary data are left over"]),
        ({"inputs": [dict(inp, data=row)]}, f32(row), None, ["not both"]),
        ({"inputs": [dict(inp, parameters={})]}, f32(row), None, ["missing field 'data'"]),
        (hdr(binary_data_size="3136"), f32(row), None, ["'binary_data_size' must be a non-negative integer"]),
        (req, f32(row), None, ["3136 bytes of binary data are left over"]),
    ]
    for header, raw, ihcl, words in cases:
        body, hlen = binary_body(header, raw)
        e("POST", infer, body, 400, words, headers={"Content-Type": BIN_TYPE, IHCL: str(hlen if ihcl is None else ihcl)})
        tally["invalid"] += 1
    # A header length that cuts the JSON short is malformed JSON, at the cut.
    body, hlen = binary_body(hdr(), f32(row))
    e("POST", infer, body, 400, ["malformed JSON"], headers={IHCL: str(hlen - 5)})
    tally["invalid"] += 1
    # Cut inside the binary section: the JSON header swallows raw bytes.
    e("POST", infer, body, 400, ["malformed JSON"], headers={IHCL: str(hlen + 8)})
    tally["invalid"] += 1


def hostile_bodies(example):
    """Bodies no client should send; the daemon must answer each and stay up."""
    rng = random.Random(1234)
    req = json.loads(example)
    return [
        b'{"inputs": [{"name": "input", "data": [1e400]}]}',
        b'{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[' + b"1" * 400 + b"]}]}",
        json.dumps({"inputs": [dict(req["inputs"][0], data=[3e38] * 784)]}).encode(),
        json.dumps({"inputs": [dict(req["inputs"][0], data=[-3.4e38, 3.4e38] * 392)]}).encode(),
        b"[" * 100000 + b"]" * 100000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b'{"inputs":[\x00]}',
        b"\xef\xbb\xbf{}",
        b'{"inputs": "' + b"A" * 100000,
        bytes(rng.getrandbits(8) for _ in range(3000)),
        b"null",
        b'{"inputs":[{"name":"input","shape":[9223372036854775807,784],"datatype":"FP32","data":[]}]}',
        b'{"inputs":[{"name":"input","shape":[-9223372036854775808,784],"datatype":"FP32","data":[]}]}',
        b'{"inputs":[{"name":"input","shape":[1,784],"datatype":"FP32","data":[' + b"[]," * 5000 + b"1]}]}",
    ]


def test_hostile(srv, example, tally):
    """Hostile bodies, truncated and abandoned requests; the daemon answers and stays up."""
    infer = "/v2/models/fashion-mlp/infer"
    for b in hostile_bodies(example):
        status, _, doc = srv.json("POST", infer, b)
        # Huge finite inputs may overflow the logits to an infinity, depending on the BLAS kernel's summation
        # order: the answer is then a 500 naming the unencodable element, which is the documented rule.
        check((status in (200, 400) or unencodable(status, doc)) and isinstance(doc, dict),
              "hostile body %r...: %d" % (b[:40], status))
        account(tally, status, doc)
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % infer).encode()
    # Bodies cut short by the client closing: no answer is owed, nothing may leak or crash.
    srv.raw(head + b"Content-Length: 5000\r\n\r\n" + example[:100], abandon=True)
    srv.raw(head + b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"inputs\": [1, 2", abandon=True)
    srv.raw(b"POST /infer HTTP/1.1\r\nHost: x\r\nContent-Le", abandon=True)
    # A whole request whose client leaves while it waits (suspended) in fashion-slow's queue.
    slow = b"POST /v2/models/fashion-slow/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(example)
    srv.raw(slow + example, abandon=True)
    tally["rows"] += 1
    with srv.lock:
        srv.sent += 3       # the three whose headers arrived whole reached the handler
    # libmicrohttpd itself refuses a malformed Content-Length, before our handler sees it.
    ans = srv.raw(head + b"Content-Length: abc\r\n\r\n{}")
    check(status_of(ans) == 400, "bad Content-Length: %r" % ans[:60])
    check(srv.alive(), "daemon alive after hostile bodies")


def run_concurrent(jobs, what):
    """Run jobs (callables) all at once from threads; returns their results."""
    results = [None] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def run(i):
        try:
            barrier.wait(timeout=60)
            results[i] = jobs[i]()
        except Exception as exc:  # noqa: BLE001 - a test failure to report, whatever it is
            results[i] = exc
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check(not any(t.is_alive() for t in threads), "%s: every request answered within 120 s" % what)
    return results


def brief(r):
    """A result without its (long) headers, for messages."""
    return r if not isinstance(r, tuple) else (r[0], r[2])


def test_concurrent_mixed(srv, example, tally):
    """100 requests at once, half valid, half hostile: each gets its proper answer."""
    hostile = hostile_bodies(example)
    bodies = [example if i % 2 == 0 else hostile[i // 2 % len(hostile)] for i in range(100)]
    jobs = [lambda b=b: srv.json("POST", "/v2/models/fashion-mlp/infer", b) for b in bodies]
    for i, r in enumerate(run_concurrent(jobs, "100 mixed")):
        if not check(isinstance(r, tuple), "mixed request %d: %r" % (i, r)):
            continue
        status, _, doc = r
        if i % 2 == 0:
            check(status == 200 and argmax(doc["outputs"][0]["data"]) == 9,
                  "mixed valid request %d: %r" % (i, brief(r)))
        else:
            check(status in (200, 400) or unencodable(status, doc), "mixed hostile request %d: %r" % (i, brief(r)))
        account(tally, status, doc)
    check(srv.alive(), "daemon alive after 100 concurrent requests")


def test_concurrent_batching(srv, example):
    """
    64 requests at once on fashion-slow (500 ms batching delay), served by 2
    HTTP threads: all answered correctly, and together.  A waiting request
    that held its thread would cap every batch at 2 rows; a batch of more
    shows that suspended requests hold none.
    """
    before = srv.metrics()
    jobs = [lambda: srv.json("POST", "/v2/models/fashion-slow/infer", example) for _ in range(64)]
    t0 = time.monotonic()
    results = run_concurrent(jobs, "64 concurrent")
    elapsed = time.monotonic() - t0
    bad = [brief(r) for r in results if not (isinstance(r, tuple) and r[0] == 200
                                              and argmax(r[2]["outputs"][0]["data"]) == 9)]
    check(not bad, "64 concurrent: %d answered wrongly: %r" % (len(bad), bad[:3]))
    after = srv.metrics()
    d = lambda k: after.get(k, 0) - before.get(k, 0)
    batches = d('inferd_execution_count{model="fashion-slow"}')
    small = d('inferd_batch_size_bucket{model="fashion-slow",le="2"}')
    check(0 < batches < 64 and small < batches,
          "64 concurrent on 2 threads: %d batches, %d of at most 2 rows (%.2f s)" % (batches, small, elapsed))
    print("64 concurrent requests: %d batches, mean %.1f rows, %.2f s" % (batches, 64 / max(batches, 1), elapsed))


def test_metrics(srv, example):
    """Counters move by exactly what a known sequence of requests did."""
    tally = {"success": 0, "rows": 0, "invalid": 0, "timeout": 0, "timeout_slow": 0}
    before = srv.metrics()
    sent0, errors0 = srv.sent, srv.errors
    test_health_and_metadata(srv)
    test_errors(srv, example, tally)
    test_inference(srv, example, tally)
    test_binary(srv, example, tally)
    test_hostile(srv, example, tally)
    test_concurrent_mixed(srv, example, tally)
    after = srv.metrics()
    d = lambda k: after.get(k, 0) - before.get(k, 0)
    m = lambda s: 'inferd_requests_total{model="fashion-mlp",status="%s"}' % s
    check(d("inferd_http_requests_total") == srv.sent - sent0,
          "http requests counted %d, sent %d" % (d("inferd_http_requests_total"), srv.sent - sent0))
    check(d("inferd_http_errors_total") == srv.errors - errors0,
          "http errors counted %d, answered %d" % (d("inferd_http_errors_total"), srv.errors - errors0))
    check(d(m("success")) == tally["success"], "successes counted %d, had %d" % (d(m("success")), tally["success"]))
    check(d(m("invalid")) == tally["invalid"], "invalid counted %d, sent %d" % (d(m("invalid")), tally["invalid"]))
    check(d(m("timeout")) == tally["timeout"], "timeouts counted %d, had %d" % (d(m("timeout")), tally["timeout"]))
    slow = 'inferd_requests_total{model="fashion-slow",status="timeout"}'
    check(d(slow) == tally["timeout_slow"], "fashion-slow timeouts counted %d, had %d" % (d(slow), tally["timeout_slow"]))
    check(d("inferd_staged_bytes_total") == tally["rows"] * 784 * 4,
          "staged bytes %d for %d rows" % (d("inferd_staged_bytes_total"), tally["rows"]))
    test_concurrent_batching(srv, example)
    check(srv.metrics().get("inferd_allocations_after_startup") == 0, "no allocation after start-up")


def cmd_endpoints(a):
    srv = Server(a.url)
    test_metrics(srv, load_example(a.example))
    check(srv.alive(), "daemon alive at the end")


def cmd_small_body(a):
    """--max_body_bytes=4096: refused before buffering with Content-Length, counted when chunked."""
    srv = Server(a.url)
    example = load_example(a.example)
    check(len(example) > 4096, "the example body is larger than 4096 bytes")
    # Only the headers are sent: the answer must come without the body.
    ans = srv.raw(b"POST /v2/models/fashion-mlp/infer HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n")
    check(status_of(ans) == 413 and b"max_body_bytes" in ans, "413 before the body: %r" % ans[:200])
    expect_error(srv, "POST", "/v2/models/fashion-mlp/infer", example, 413, ["max_body_bytes (4096)"])
    chunks = iter([example[i:i + 1000] for i in range(0, len(example), 1000)])
    expect_error(srv, "POST", "/infer", chunks, 413, ["exceeds max_body_bytes"])
    # Binary tensors count in the body like JSON does.
    status, _, data = binary_post(srv, "/v2/models/fashion-mlp/infer", {"inputs": [
        {"name": "input", "shape": [2, 784], "datatype": "FP32", "parameters": {"binary_data_size": 6272}}]},
        f32([0.5] * 1568))
    check(status == 413 and b"max_body_bytes" in data, "binary body over the limit: %d %r" % (status, data[:200]))
    # Exactly at the limit is read and parsed.
    expect_error(srv, "POST", "/infer", b"{" + b" " * 4094 + b"}", 400, ["missing field 'model'"])
    check(srv.alive(), "daemon alive after 413s")


def cmd_shutdown(a):
    """SIGTERM while requests wait in fashion-slow's queue: all are answered; readiness never says 200 again."""
    srv = Server(a.url)
    example = load_example(a.example)
    results = [None] * 8

    def one(i):
        try:
            results[i] = srv.json("POST", "/v2/models/fashion-slow/infer", example)
        except Exception as exc:  # noqa: BLE001
            results[i] = exc
    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    staged0 = srv.metrics().get("inferd_staged_bytes_total", 0)
    for t in threads:
        t.start()
    # Staged means decoded and (a moment later) queued, where the batching delay holds them.
    deadline = time.monotonic() + 30
    while (srv.metrics().get("inferd_staged_bytes_total", 0) - staged0 < 8 * 784 * 4
           and time.monotonic() < deadline):
        time.sleep(0.005)
    os.kill(a.pid, signal.SIGTERM)
    # The signal is handled asynchronously: readiness may say 200 a moment longer, then
    # turns 503 (while in-flight requests drain) or the port closes, and never comes back.
    ready = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            ready.append(srv.request("GET", "/v2/health/ready", timeout=5)[0])
        except OSError:
            ready.append("closed")
            break
        time.sleep(0.002)
    for t in threads:
        t.join(60)
    settled = [r for i, r in enumerate(ready) if r != 200 or any(x != 200 for x in ready[:i])]
    check(ready and ready[-1] == "closed" and 200 not in settled,
          "readiness after SIGTERM: %r" % ready[-10:])
    print("readiness after SIGTERM: %d x 200, %d x 503, then %s" % (
        ready.count(200), ready.count(503), ready[-1] if ready else "nothing"))
    for i, r in enumerate(results):
        check(isinstance(r, tuple) and r[0] == 200 and argmax(r[2]["outputs"][0]["data"]) == 9,
              "request in flight at SIGTERM %d: %r" % (i, brief(r)))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup-repo")
    s.add_argument("target")
    s.add_argument("model_dir")
    for name in ("endpoints", "small-body", "shutdown"):
        s = sub.add_parser(name)
        s.add_argument("--url", required=True)
        s.add_argument("--example", required=True)
        if name == "shutdown":
            s.add_argument("--pid", type=int, required=True)
    a = p.parse_args()
    if a.cmd == "setup-repo":
        setup_repo(a.target, a.model_dir)
        return 0
    {"endpoints": cmd_endpoints, "small-body": cmd_small_body, "shutdown": cmd_shutdown}[a.cmd](a)
    if FAILURES:
        print("%s: %d check(s) failed" % (a.cmd, len(FAILURES)), file=sys.stderr)
        return 1
    print("%s: all checks passed" % a.cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
