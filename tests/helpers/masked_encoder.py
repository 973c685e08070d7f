#!/usr/bin/env python3
"""masked_encoder.py: batching across lengths, through a daemon.

  masked_encoder.py make DIR                export the models below into DIR (model.onnx, model.json)
  masked_encoder.py check URL DIR [SOCKET]  send mixed-length traffic and check every answer; client/python on
                                            PYTHONPATH and INFERD_LIB naming libinferd for SOCKET (shared memory)

masked_encoder: input_ids and attention_mask [N, T] int64 (T <= 64), token and position embeddings, two
transformer encoder layers written out whose attention adds (1 - mask) * -1e4 to the scores; outputs
hidden [N, T, 32] (follows T: sliced back to each request's length), pooled [N, 32] (the mean over the
masked positions: copied as it is) and hidden_t [N, 32, T] (hidden transposed: a slice of 32 strided runs).  The daemon detects the mask and pads.
declared_encoder: the same network with inputs tokens and valid, and "padding" declared in model.json with
buckets [16, 40, 64].
plain_encoder: x [N, T, 16] float, no mask: requests batch only with others of the same length (two lengths
shared by 4 threads each still batch: HTTP requests batch past heads of the other length).
unmasked_pool: input_ids and attention_mask, but the mask is not applied and the output is the mean over
every position: its padded warm-up disagrees, so the daemon refuses to pad it (the script checks answers,
the test checks the log).

check: 8 HTTP threads (binary) send requests of lengths that no two threads share, so a batch of more than
one request is a batch of different lengths; every answer must have the request's own shape and equal
onnxruntime on the request alone within 1e-5 of the output's scale, and a sample of them the daemon's
answer to the request sent alone; some requests have 2 rows.  With SOCKET, 4 shared-memory clients do the same.  Prints
"rows R batches B" per model and phase for the test to check.  Exit 0 when every check passes, 1 otherwise,
77 without torch, onnxruntime or numpy.
"""
import http.client
import inspect
import json
import os
import random
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

D, HEADS, VOCAB, TMAX = 32, 4, 50, 64
MASKED, DECLARED, PLAIN, UNMASKED = "masked_encoder", "declared_encoder", "plain_encoder", "unmasked_pool"
TOL = 1e-5


class Layer(nn.Module):
    """A post-norm encoder layer written out, the mask added to the attention scores."""

    def __init__(self):
        super().__init__()
        self.dh = D // HEADS
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.ff1, self.ff2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.n1, self.n2 = nn.LayerNorm(D), nn.LayerNorm(D)

    def forward(self, x, add):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        split = lambda t: t.reshape(t.shape[0], -1, HEADS, self.dh).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        s = q @ k.transpose(-1, -2) / (self.dh ** 0.5)
        if add is not None:
            s = s + add
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(x.shape[0], -1, D)
        x = self.n1(x + self.out(a))
        return self.n2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self, masked=True):
        super().__init__()
        self.masked = masked
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(TMAX, D) * 0.1)
        self.layers = nn.ModuleList([Layer() for _ in range(2)])

    def forward(self, ids, mask):
        h = self.tok(ids) + self.pos[:ids.shape[1]]
        m = mask.to(torch.float32)
        add = ((1.0 - m) * -1e4)[:, None, None, :] if self.masked else None
        for layer in self.layers:
            h = layer(h, add)
        if self.masked:
            pooled = (h * m[:, :, None]).sum(1) / m.sum(1, keepdim=True)
            return h, pooled, h.transpose(1, 2)
        # Ignores the mask (kept as an input through a factor of one) and pools every position.
        return h.mean(1) * (m.sum(1, keepdim=True) * 0 + 1)


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, D)
        self.layer = Layer()

    def forward(self, x):
        return self.layer(self.proj(x), None)


def build(name):
    torch.manual_seed({MASKED: 1, DECLARED: 1, PLAIN: 2, UNMASKED: 3}[name])
    m = Plain() if name == PLAIN else Encoder(masked=name != UNMASKED)
    return m.eval()


def names(name):
    """(input names, output names) of a model."""
    if name == PLAIN:
        return ["x"], ["y"]
    ins = ["tokens", "valid"] if name == DECLARED else ["input_ids", "attention_mask"]
    return ins, (["pooled"] if name == UNMASKED else ["hidden", "pooled", "hidden_t"])


def export(name, d):
    out = os.path.join(d, name)
    os.makedirs(out, exist_ok=True)
    ins, outs = names(name)
    if name == PLAIN:
        example = (torch.randn(2, 23, 16),)
    else:
        example = (torch.randint(0, VOCAB, (2, 23)), torch.ones(2, 23, dtype=torch.int64))
    axes = {n: {0: "N", 1: "T"} for n in ins}
    axes.update({n: {"pooled": {0: "N"}, "hidden_t": {0: "N", 2: "T"}}.get(n, {0: "N", 1: "T"}) for n in outs})
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(build(name), example, os.path.join(out, "model.onnx"), opset_version=17, input_names=ins,
                      output_names=outs, dynamic_axes=axes, **extra)
    cfg = {"platform": "onnx", "max_batch_size": 8, "max_dims": {n: [TMAX] + ([16] if name == PLAIN else [])
                                                                for n in ins},
           "dynamic_batching": {"max_queue_delay_us": 20000, "eager_dispatch": False}}
    if name == DECLARED:
        cfg["padding"] = {"dim": {"input": "tokens", "index": 1}, "values": {"tokens": 0, "valid": 0},
                          "buckets": [16, 40, 64]}
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(cfg, f)


def cmd_make(d):
    for name in (MASKED, DECLARED, PLAIN, UNMASKED):
        export(name, d)
    print("masked_encoder: exported the models into %s" % d)


class Check:
    def __init__(self, url, d, socket):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.socket = u.hostname, u.port, socket
        self.failures = 0
        self.lock = threading.Lock()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        self.sess = {n: ort.InferenceSession(os.path.join(d, n, "model.onnx"), opts,
                                             providers=["CPUExecutionProvider"])
                     for n in (MASKED, DECLARED, PLAIN, UNMASKED)}

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

    def inputs(self, name, t, rng, rows=1):
        """One request of rows rows of length t."""
        ins, _ = names(name)
        if name == PLAIN:
            return {"x": rng.standard_normal((rows, t, 16)).astype(np.float32)}
        return {ins[0]: rng.integers(1, VOCAB, (rows, t)).astype(np.int64), ins[1]: np.ones((rows, t), np.int64)}

    def http_infer(self, name, feeds):
        """{output: array} over HTTP with binary tensors, or (status, text)."""
        dt = {np.dtype(np.float32): ("FP32", "<f4"), np.dtype(np.int64): ("INT64", "<i8")}
        head = {"inputs": [], "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in names(name)[1]]}
        body = b""
        for n, a in feeds.items():
            head["inputs"].append({"name": n, "datatype": dt[a.dtype][0], "shape": list(a.shape),
                                   "parameters": {"binary_data_size": a.nbytes}})
            body += a.astype(dt[a.dtype][1]).tobytes()
        h = json.dumps(head).encode()
        st, hd, raw = self.request("POST", "/v2/models/%s/infer" % name, h + body,
                                   {"Inference-Header-Content-Length": str(len(h)),
                                    "Content-Type": "application/octet-stream"})
        if st != 200:
            return st, raw.decode(errors="replace")
        n = int(hd["inference-header-content-length"])
        res, off = {}, n
        for o in json.loads(raw[:n])["outputs"]:
            size = o["parameters"]["binary_data_size"]
            res[o["name"]] = np.frombuffer(raw[off:off + size], dtype="<f4").reshape(o["shape"])
            off += size
        return res

    def compare(self, what, got, ref):
        """got (a dict or an error) against ref (onnxruntime's or the daemon's), shape and values."""
        if not isinstance(got, dict):
            self.fail("%s: %s" % (what, got))
            return
        for o, want in ref.items():
            y = got.get(o)
            if y is None or list(y.shape) != list(want.shape):
                self.fail("%s: output %s has shape %s, want %s" % (what, o, None if y is None else list(y.shape),
                                                                 list(want.shape)))
                continue
            scale = max(float(np.max(np.abs(want))), 1e-30)
            err = float(np.max(np.abs(y.astype(np.float64) - want))) / scale
            if not err <= TOL:
                self.fail("%s: output %s differs by %.3g of its scale" % (what, o, err))

    def reference(self, name, feeds):
        outs = names(name)[1]
        return dict(zip(outs, self.sess[name].run(outs, feeds)))

    def traffic(self, name, nthreads, per_thread, lengths, infer_fn, rows):
        """nthreads threads, thread i sending per_thread requests of lengths(i, j) (distinct between threads)."""
        results = [[] for _ in range(nthreads)]
        barrier = threading.Barrier(nthreads)

        def worker(i):
            rng = np.random.default_rng(100 + i)
            infer = infer_fn()
            barrier.wait()
            for j in range(per_thread):
                feeds = self.inputs(name, lengths(i, j), rng, rows(i, j))
                results[i].append((feeds, infer(name, feeds)))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(nthreads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r for rs in results for r in rs]

    def rows_batches(self, name):
        st, _, raw = self.request("GET", "/metrics")
        vals = {}
        for line in raw.decode().splitlines():
            for key in ("inferd_inference_count", "inferd_execution_count"):
                if line.startswith('%s{model="%s"' % (key, name)):
                    vals[key] = int(float(line.split()[-1]))
        return vals.get("inferd_inference_count", 0), vals.get("inferd_execution_count", 0)

    def phase(self, label, name, nthreads, per_thread, lengths, infer_fn, alone=8, rows=lambda i, j: 1):
        r0, b0 = self.rows_batches(name)
        done = self.traffic(name, nthreads, per_thread, lengths, infer_fn, rows)
        r1, b1 = self.rows_batches(name)
        print("%s %s: rows %d batches %d" % (label, name, r1 - r0, b1 - b0))
        for k, (feeds, got) in enumerate(done):
            t = next(iter(feeds.values())).shape[1]
            self.compare("%s %s request %d (length %d) vs onnxruntime" % (label, name, k, t), got,
                         self.reference(name, feeds))
        for k, (feeds, got) in enumerate(done[:alone]):
            if isinstance(got, dict):
                self.compare("%s %s request %d vs itself alone" % (label, name, k), got,
                             self.http_infer(name, feeds))

    def shm_client(self):
        import inferd
        c = inferd.connect(self.socket)
        return lambda name, feeds: {o: np.array(a) for o, a in c.infer(name, feeds).items()}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        cmd_make(sys.argv[2])
        return 0
    if len(sys.argv) not in (4, 5) or sys.argv[1] != "check":
        print(__doc__)
        return 2
    c = Check(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else None)
    http_fn = lambda: c.http_infer
    # One bucket (33..64): thread i sends lengths 33 + i + 8j, never another thread's.
    one_bucket = lambda i, j: 33 + i + 8 * (j % 4)
    c.phase("http", MASKED, 8, 12, one_bucket, http_fn)
    # Random lengths 1..64, still distinct between threads (i + 1 modulo 8); every other request of 2 rows
    # (each row's outputs sliced out of strided batch rows).
    rand = random.Random(5)
    c.phase("http-random", MASKED, 8, 8, lambda i, j: 1 + i + 8 * rand.randrange(8), http_fn, alone=16,
            rows=lambda i, j: 1 + j % 2)
    # Declared buckets [16, 40, 64]: lengths 41..64.
    c.phase("http", DECLARED, 8, 8, lambda i, j: 41 + i + 8 * (j % 3), http_fn)
    # No mask, two lengths shared by 4 threads each: requests of one length batch past the other's.
    c.phase("http-two", PLAIN, 8, 8, lambda i, j: 10 + 7 * (i % 2), http_fn)
    # No mask: lengths 1..64 each used once, so no two requests may share a batch.
    c.phase("http", PLAIN, 8, 8, lambda i, j: 1 + i + 8 * j, http_fn)
    c.phase("http", UNMASKED, 8, 4, lambda i, j: 1 + i + 8 * j, http_fn)
    if c.socket:
        c.phase("shm", MASKED, 4, 12, lambda i, j: 33 + i + 4 * (j % 8), c.shm_client, rows=lambda i, j: 1 + j % 2)
    print("masked_encoder: %d failures" % c.failures)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
