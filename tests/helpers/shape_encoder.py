#!/usr/bin/env python3
"""shape_encoder.py: two exported PyTorch encoders whose output length is not the input's, through a daemon.

  shape_encoder.py make DIR               export DIR/audio_encoder and DIR/pos_encoder (model.onnx, model.json)
  shape_encoder.py check URL DIR [SOCKET] check them against onnxruntime and PyTorch over HTTP JSON, the
                                          binary extension and (with SOCKET) shared memory; client/python on
                                          PYTHONPATH and INFERD_LIB naming libinferd for the last

audio_encoder: input x [N, 80, T] (T variable, the default maximum 512), Conv1d(80, 128, k3, p1) + GELU,
Conv1d(128, 128, k3, s2, p1) + GELU, transpose, two transformer encoder layers written out (d_model 128, 4 heads,
batch_first); output y [N, ceil(T / 2), 128].  ceil(512 / 2) = ceil(511 / 2): sampling the graph at the
largest T and one below cannot tell this dim is variable.  Checked: the metadata says [-1, -1, 128]; T = 1,
2, 33, 47, 64, 100, 511, 512 at batch 1 to 3 give onnxruntime's shape and values (and PyTorch's) on every
transport; request A (3x80x47) then B (1x80x64), on each transport, gives B exactly B's answer and none of
A's values; requests of different T at once each get their own.

pos_encoder: input x [N, T, 16], Linear(16, 32) plus a learned 64-row position table sliced to T
(pos[:T], a Slice whose end is the input's T), one such layer; output [N, T, 32].  The graph
only takes T <= 64.  Checked: the model loads (at the bound the graph implies, not the default 512), its
metadata says [-1, -1, 16] -> [-1, -1, 32], T = 1, 17, 63, 64 give the right answers, and T = 65 and 300 get
a 400 that names the dim (as 'dim 1' or 'T') and the bound 64 on every transport.

Exit 0 when every check passes, 1 otherwise, 77 without torch, onnx, onnxruntime or numpy.
"""
import http.client
import inspect
import json
import os
import re
import sys
import threading
import urllib.parse

try:
    import numpy as np
    import onnxruntime as ort
    import torch
    from torch import nn
except ImportError as e:
    print("SKIP: python3 cannot import numpy, onnxruntime and torch (%s)" % e)
    sys.exit(77)

AUDIO, POS = "audio_encoder", "pos_encoder"
POS_ROWS = 64


class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer written out (MatMul, Softmax, MatMul): torch 2.11's TorchScript
    exporter writes nn.MultiheadAttention's reshapes with the example's sequence length as a constant, so an
    nn.TransformerEncoderLayer export only runs at the example's length (onnxruntime refuses any other)."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda t: t.reshape(t.shape[0], -1, self.heads, self.dh).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        a = torch.softmax(q @ k.transpose(-1, -2) / (self.dh ** 0.5), dim=-1) @ v
        a = a.transpose(1, 2).reshape(x.shape[0], -1, self.heads * self.dh)
        x = self.norm1(x + self.out(a))
        return self.norm2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class AudioEncoder(nn.Module):
    def __init__(self, d=128, heads=4):
        super().__init__()
        self.conv1 = nn.Conv1d(80, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.layers = nn.ModuleList([EncoderLayer(d, heads, 2 * d) for _ in range(2)])

    def forward(self, x):
        h = nn.functional.gelu(self.conv1(x))
        h = nn.functional.gelu(self.conv2(h)).transpose(1, 2)
        for layer in self.layers:
            h = layer(h)
        return h


class PosEncoder(nn.Module):
    def __init__(self, d=32, rows=POS_ROWS):
        super().__init__()
        self.proj = nn.Linear(16, d)
        self.pos = nn.Parameter(torch.randn(rows, d) * 0.5)
        self.layer = EncoderLayer(d, 2, 64)

    def forward(self, x):
        return self.layer(self.proj(x) + self.pos[:x.shape[1]])


def build(name):
    torch.manual_seed(7 if name == AUDIO else 8)
    m = AudioEncoder() if name == AUDIO else PosEncoder()
    return m.eval()


def export(name, d):
    out = os.path.join(d, name)
    os.makedirs(out, exist_ok=True)
    m = build(name)
    if name == AUDIO:
        example, axes = torch.randn(2, 80, 37), {"x": {0: "N", 2: "T"}, "y": {0: "N", 1: "T2"}}
    else:
        example, axes = torch.randn(2, 23, 16), {"x": {0: "N", 1: "T"}, "y": {0: "N", 1: "T"}}
    # The TorchScript exporter on every torch (the dynamo one, torch >= 2.9's default, needs onnxscript).
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(m, example, os.path.join(out, "model.onnx"), opset_version=17, input_names=["x"],
                      output_names=["y"], dynamic_axes=axes, **extra)
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump({"platform": "onnx", "max_batch_size": 4, "dynamic_batching": {"max_queue_delay_us": 2000}}, f)


def cmd_make(d):
    for name in (AUDIO, POS):
        export(name, d)
    print("shape_encoder: exported %s and %s into %s" % (AUDIO, POS, d))


# ---------------------------------------------------------------- checking

class Check:
    def __init__(self, url, d, socket):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.failures = 0
        self.lock = threading.Lock()
        self.sess, self.torch = {}, {}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        for name in (AUDIO, POS):
            self.sess[name] = ort.InferenceSession(os.path.join(d, name, "model.onnx"), opts,
                                                   providers=["CPUExecutionProvider"])
            self.torch[name] = build(name)
        self.shm, self.err = None, None
        if socket:
            import inferd
            from inferd import errors
            self.shm, self.err = inferd.connect(socket), errors
        self.transports = ["json", "binary"] + (["shm"] if self.shm is not None else [])

    def fail(self, msg):
        with self.lock:
            self.failures += 1
            print("FAIL: " + msg)

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection(self.host, self.port, timeout=300)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def reference(self, model, x):
        """onnxruntime's output, checked against PyTorch's (1e-3 of the largest value: different kernels)."""
        y = self.sess[model].run(None, {"x": x})[0]
        with torch.no_grad():
            t = self.torch[model](torch.from_numpy(x)).numpy()
        if t.shape != y.shape or np.max(np.abs(t - y)) > 1e-3 * max(1.0, float(np.max(np.abs(t)))):
            self.fail("%s %s: onnxruntime and PyTorch disagree (%s vs %s)" % (model, list(x.shape), y.shape,
                                                                                t.shape))
        return y

    def infer(self, model, x, transport, want_shape=None):
        """(status, (shape, flat float32 values) or the error text) over one transport."""
        if transport == "json":
            body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                                           "data": x.flatten().tolist()}]}).encode()
            st, _, raw = self.request("POST", "/v2/models/%s/infer" % model, body,
                                      {"Content-Type": "application/json"})
            if st != 200:
                return st, raw.decode(errors="replace")
            o = json.loads(raw)["outputs"][0]
            return st, (o["shape"], np.array(o["data"], dtype=np.float32))
        if transport == "binary":
            h = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                                        "parameters": {"binary_data_size": x.nbytes}}],
                            "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
            st, hd, raw = self.request("POST", "/v2/models/%s/infer" % model, h + x.astype("<f4").tobytes(),
                                       {"Inference-Header-Content-Length": str(len(h)),
                                        "Content-Type": "application/octet-stream"})
            if st != 200:
                return st, raw.decode(errors="replace")
            n = int(hd.get("inference-header-content-length", len(raw)))
            o = json.loads(raw[:n])["outputs"][0]
            size = o["parameters"]["binary_data_size"]
            if n + size != len(raw):
                return 200, (o["shape"], np.frombuffer(raw[n:], dtype="<f4"))
            return st, (o["shape"], np.frombuffer(raw[n:n + size], dtype="<f4"))
        try:
            try:
                y = self.shm.infer(model, {"x": x})
            except self.err.InvalidRequest as e:
                # A dim that follows no input: the client gives the output array (its shape, the answer's).
                if "pass out=" not in str(e) or want_shape is None:
                    raise
                y = self.shm.infer(model, {"x": x}, out={"y": np.empty(want_shape, np.float32)})
        except self.err.InvalidRequest as e:
            return 400, "InvalidRequest: %s" % e
        except self.err.InferdError as e:
            return 500, "%s: %s" % (type(e).__name__, e)
        if isinstance(y, dict):
            y = y["y"]
        return 200, (list(y.shape), np.array(y, dtype=np.float32).flatten())

    def compare(self, what, st, got, want):
        """True when the answer has want's shape and values (1e-4 relative, scaled by the largest)."""
        if st != 200:
            self.fail("%s: status %d %s" % (what, st, str(got)[:300]))
            return False
        shape, data = got
        if list(shape) != list(want.shape) or data.size != want.size:
            self.fail("%s: answer shape %s with %d values, expected %s (%d values)" % (
                what, shape, data.size, list(want.shape), want.size))
            return False
        w = want.astype(np.float64).flatten()
        tol = 1e-4 * max(1.0, float(np.max(np.abs(w)))) + 1e-4 * np.abs(w)
        bad = np.flatnonzero(~(np.abs(data.astype(np.float64) - w) <= tol))
        if bad.size:
            i = int(bad[0])
            self.fail("%s: %d of %d values differ, first at flat %d: %r, expected %r" % (
                what, bad.size, w.size, i, float(data[i]), w[i]))
            return False
        return True

    def ready(self, model):
        st, _, raw = self.request("GET", "/v2/models/%s/ready" % model)
        if st == 200:
            return True
        _, _, idx = self.request("POST", "/v2/repository/index", b"{}")
        reason = [e.get("reason", "") for e in json.loads(idx or b"[]") if e.get("name") == model]
        self.fail("%s is not ready (HTTP %d): %s" % (model, st, reason[0] if reason else raw[:300]))
        return False

    def metadata(self, model, want_in, want_out):
        st, _, raw = self.request("GET", "/v2/models/%s" % model)
        meta = json.loads(raw) if st == 200 else {}
        got_in = [i["shape"] for i in meta.get("inputs", [])]
        got_out = [o["shape"] for o in meta.get("outputs", [])]
        if got_in != [want_in] or got_out != [want_out]:
            self.fail("%s metadata: inputs %s outputs %s, expected [%s] and [%s]" % (
                model, got_in, got_out, want_in, want_out))


def audio_input(rows, t, seed):
    return np.random.default_rng(seed).standard_normal((rows, 80, t)).astype(np.float32)


def check_audio(ck):
    if not ck.ready(AUDIO):
        return
    ck.metadata(AUDIO, [-1, 80, -1], [-1, -1, 128])
    cases = [(1, 1), (2, 2), (3, 47), (1, 64), (2, 33), (3, 100), (1, 511), (2, 512), (1, 47), (3, 1)]
    for i, (rows, t) in enumerate(cases):
        x = audio_input(rows, t, 100 + i)
        want = ck.reference(AUDIO, x)
        if list(want.shape) != [rows, (t + 1) // 2, 128]:
            ck.fail("%s: onnxruntime's shape %s for T = %d" % (AUDIO, list(want.shape), t))
        for tr in ck.transports:
            st, got = ck.infer(AUDIO, x, tr, want.shape)
            ck.compare("%s %s T = %d (x %s)" % (AUDIO, tr, t, list(x.shape)), st, got, want)
    # The leak: A (3x80x47) then B (1x80x64); B's answer must be B's, with none of A's values in it.
    a, b = audio_input(3, 47, 200), audio_input(1, 64, 201)
    ya, yb = ck.reference(AUDIO, a), ck.reference(AUDIO, b)
    a_bits = set(np.ascontiguousarray(ya, dtype=np.float32).view(np.uint32).flatten().tolist())
    for tr in ck.transports:
        ck.infer(AUDIO, a, tr, ya.shape)
        st, got = ck.infer(AUDIO, b, tr, yb.shape)
        what = "%s %s: request B (1x80x64) right after A (3x80x47)" % (AUDIO, tr)
        ck.compare(what, st, got, yb)
        if st == 200:
            vals = np.ascontiguousarray(got[1], dtype=np.float32)
            bits = vals.view(np.uint32).flatten()
            # One of A's values where B's own differs: a few of 8,192 floats may equal one of A's by chance
            # (seen on the H200), so a value counts as leaked only when it is not B's answer there.
            off = np.abs(vals.flatten() - yb.flatten().astype(np.float32)) > 1e-4 * float(np.abs(yb).max())
            if vals.size != yb.size:
                off = np.ones(bits.size, dtype=bool)
            leaked = np.flatnonzero(np.isin(bits, np.array(sorted(a_bits), dtype=np.uint32)) & off)
            if leaked.size:
                ck.fail("%s: B's answer holds %d of A's output values, at flat positions %d to %d" % (
                    what, leaked.size, int(leaked[0]), int(leaked[-1])))
    # Different T at once, on every transport: each answer its own.
    jobs = [(1 + i % 3, t, 300 + i) for i, t in enumerate([5, 47, 64, 9, 130, 47, 2, 64, 301])]
    threads = []
    for i, (rows, t, seed) in enumerate(jobs):
        def one(rows=rows, t=t, seed=seed, tr=ck.transports[i % len(ck.transports)]):
            x = audio_input(rows, t, seed)
            want = ck.reference(AUDIO, x)
            st, got = ck.infer(AUDIO, x, tr, want.shape)
            ck.compare("%s %s concurrent T = %d (x %s)" % (AUDIO, tr, t, list(x.shape)), st, got, want)
        threads.append(threading.Thread(target=one))
        threads[-1].start()
    for th in threads:
        th.join()


def check_pos(ck):
    if not ck.ready(POS):
        return
    ck.metadata(POS, [-1, -1, 16], [-1, -1, 32])
    for i, (rows, t) in enumerate([(1, 1), (2, 17), (3, 63), (2, POS_ROWS), (1, 17)]):
        x = np.random.default_rng(400 + i).standard_normal((rows, t, 16)).astype(np.float32)
        want = ck.reference(POS, x)
        for tr in ck.transports:
            st, got = ck.infer(POS, x, tr, want.shape)
            ck.compare("%s %s T = %d (x %s)" % (POS, tr, t, list(x.shape)), st, got, want)
    for t in (POS_ROWS + 1, 300):
        x = np.zeros((1, t, 16), dtype=np.float32)
        for tr in ck.transports:
            st, got = ck.infer(POS, x, tr)
            msg = str(got)
            if st != 400 or not re.search(r"\b%d\b" % POS_ROWS, msg) or not re.search(r"dim 1\b|\bT\b", msg):
                ck.fail("%s %s T = %d (the table has %d rows): status %d %s (want 400 naming the dim and the "
                        "bound %d)" % (POS, tr, t, POS_ROWS, st, msg[:300], POS_ROWS))


def cmd_check(url, d, socket=None):
    ck = Check(url, d, socket)
    try:
        check_audio(ck)
        check_pos(ck)
    finally:
        if ck.shm is not None:
            ck.shm.close()
    print("shape_encoder: %s and %s over %s: %d failure(s)" % (AUDIO, POS, ", ".join(ck.transports),
                                                               ck.failures))
    return 1 if ck.failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        cmd_make(sys.argv[2])
        return 0
    if len(sys.argv) in (4, 5) and sys.argv[1] == "check":
        return cmd_check(*sys.argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
